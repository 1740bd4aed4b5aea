import { describeZodError } from '@jarvis/bus';
import { MissionFields } from '@jarvis/contracts';
import { createMission, type MissionDeps } from '../missions/mission-service';
import { type AgentTool, jsonSchemaOf, ToolInputError } from './agent-tool';

// The model's half of the missions API: the objective and, if it has one, the plan. The caps
// and the conversation are not the model's to choose: the server's defaults and this turn's.
const Args = MissionFields.pick({ objective: true, tasks: true });
const PARAMETERS = jsonSchemaOf(Args);

export function createMissionTool(deps: MissionDeps): AgentTool {
  return {
    definition: {
      name: 'start_mission',
      description:
        'Start a mission: work that takes several steps (research, comparing options, preparing a plan) done in the background as tasks, in parallel where they do not depend on each other, with a report posted in this conversation when done. Give the objective, and the tasks if you know them (else they are planned for you). Tell the user it started; do not wait for it.',
      parameters: PARAMETERS,
    },
    risk: 'safe',
    async run(input, context) {
      const parsed = Args.safeParse(input);
      if (!parsed.success) throw new ToolInputError(describeZodError(parsed.error));
      const mission = await createMission(deps, {
        ...parsed.data,
        userId: context.userId,
        conversationId: context.conversationId,
        createdBy: 'model',
        sourceRunId: context.runId,
        userTimeZone: context.timeZone,
      });
      return {
        missionId: mission.id,
        status: mission.status,
        tasks: mission.tasks.map((task) => `${task.number}. ${task.title}`),
        limits: mission.limits,
        note: 'The mission runs in the background; its report will be posted in this conversation.',
      };
    },
  };
}
