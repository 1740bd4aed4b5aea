import { type Bus, describeZodError, isBusError } from '@jarvis/bus';
import {
  CronRule,
  type Schedule,
  type ScheduleAction,
  ScheduleStatus,
  schedulerSchedulesCreate,
  schedulerSchedulesDelete,
  schedulerSchedulesList,
  TimeZone,
} from '@jarvis/contracts';
import { z } from 'zod';
import { type AgentTool, jsonSchemaOf, type ToolContext, ToolInputError } from './agent-tool';
import { resolveTime } from './schedule-time';

// The model's half of the schedules API. The rule and the action are flat fields, one of each,
// which models fill in more reliably than nested unions; the user, the conversation and the
// zone are this turn's.
const CreateArgs = z
  .strictObject({
    at: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .optional()
      .describe(
        'Once, at this time: an ISO 8601 instant with its offset (2026-12-03T09:00:00+01:00), or a phrase in the user\'s own time ("in 20 minutes", "tomorrow at 9", "next Friday at 17:00").',
      ),
    cron: CronRule.optional().describe(
      'Recurring, on the wall clock: 5 fields, minute hour day-of-month month day-of-week ("0 7 * * 1-5" is weekdays at 07:00).',
    ),
    timeZone: TimeZone.optional().describe(
      "The cron rule's IANA time zone (Europe/Oslo); default: the user's.",
    ),
    everyMinutes: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe('Recurring, every this many minutes of elapsed time (60: hourly).'),
    remind: z
      .string()
      .trim()
      .min(1)
      .optional()
      .describe('A reminder: this text is posted to the user at that time, as it is.'),
    prompt: z
      .string()
      .trim()
      .min(1)
      .optional()
      .describe(
        'An instruction you carry out at that time (a briefing, a check), your answer posted to the user.',
      ),
    mission: z
      .string()
      .trim()
      .min(1)
      .optional()
      .describe('The objective of a mission (background work in tasks) started at that time.'),
    name: z.string().trim().min(1).max(200).optional().describe('A short name for the schedule.'),
  })
  .superRefine((args, ctx) => {
    for (const [what, fields] of [
      ['a time', ['at', 'cron', 'everyMinutes']],
      ['an action', ['remind', 'prompt', 'mission']],
    ] as const) {
      const given = fields.filter((field) => args[field] !== undefined);
      if (given.length !== 1) {
        ctx.addIssue({
          code: 'custom',
          message: `give exactly one of ${fields.join(', ')} for ${what} (got ${given.length === 0 ? 'none' : given.join(', ')})`,
        });
      }
    }
    if (args.timeZone !== undefined && args.cron === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['timeZone'],
        message: "timeZone is only for cron; give at in the user's time or with an offset",
      });
    }
  });
type CreateArgs = z.infer<typeof CreateArgs>;

const ListArgs = z.strictObject({
  status: ScheduleStatus.optional().describe('Only schedules with this status.'),
});

const CancelArgs = z.strictObject({
  id: z.uuid().describe('The schedule id, from schedule_list or schedule_create.'),
});

// schedule_create, schedule_list and schedule_cancel: the scheduler's bus requests, for the
// turn's user. `risky`: the names of the tools that wait for the user's approval
// (APPROVAL_TOOLS).
export function createScheduleTools(bus: Bus, risky: Set<string>): AgentTool[] {
  const tools: AgentTool[] = [
    {
      definition: {
        name: 'schedule_create',
        description:
          "Schedule something for later: a reminder, an instruction you carry out then, or a mission. Give one time (at, cron or everyMinutes) and one action (remind, prompt or mission). Times are in the user's time zone. Tell the user the time as nextRun states it, so they can correct it.",
        parameters: jsonSchemaOf(CreateArgs),
      },
      risk: 'safe',
      async run(input, context) {
        const args = parse(CreateArgs, input);
        const zone = userZone(context);
        const now = new Date();
        const when = rule(args, now, zone);
        const { schedule } = await askScheduler(() =>
          bus.request(
            schedulerSchedulesCreate,
            {
              userId: context.userId,
              userTimeZone: zone,
              isUserTimeZoneSet: context.timeZone !== undefined,
              createdBy: 'model',
              sourceRunId: context.runId,
              schedule: {
                ...when,
                action: action(args),
                conversationId: context.conversationId,
                ...(args.name ? { name: args.name } : {}),
              },
            },
            { timeoutMs: context.timeoutMs },
          ),
        );
        const shownSchedule = shown(schedule);
        return {
          ...shownSchedule,
          note:
            context.timeZone === undefined
              ? `Set for ${shownSchedule.nextRun}. The user has not set a time zone, so times are UTC: tell them so, and that they can set their own time zone in the settings.`
              : `Set for ${shownSchedule.nextRun}: tell the user so, in these words.`,
        };
      },
    },
    {
      definition: {
        name: 'schedule_list',
        description:
          "List the user's schedules (reminders, recurring instructions, scheduled missions), soonest first, with their ids and next run times.",
        parameters: jsonSchemaOf(ListArgs),
      },
      risk: 'safe',
      async run(input, context) {
        const args = parse(ListArgs, input);
        const { schedules } = await askScheduler(() =>
          bus.request(
            schedulerSchedulesList,
            { userId: context.userId, ...args },
            { timeoutMs: context.timeoutMs },
          ),
        );
        return { schedules: schedules.map(shown) };
      },
    },
    {
      definition: {
        name: 'schedule_cancel',
        description: 'Cancel a schedule by its id: it is deleted with its history.',
        parameters: jsonSchemaOf(CancelArgs),
      },
      risk: 'safe',
      async run(input, context) {
        const { id } = parse(CancelArgs, input);
        await askScheduler(() =>
          bus.request(
            schedulerSchedulesDelete,
            { userId: context.userId, id },
            { timeoutMs: context.timeoutMs },
          ),
        );
        return { cancelled: id };
      },
    },
  ];
  return tools.map((tool) =>
    risky.has(tool.definition.name) ? { ...tool, risk: 'risky' as const } : tool,
  );
}

function parse<T extends z.ZodType>(schema: T, input: unknown): z.output<T> {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw new ToolInputError(describeZodError(parsed.error));
  return parsed.data;
}

function userZone(context: ToolContext): string {
  return context.timeZone ?? 'UTC';
}

function rule(args: CreateArgs, now: Date, zone: string) {
  if (args.cron !== undefined) {
    return {
      kind: 'cron' as const,
      cron: args.cron,
      ...(args.timeZone ? { timeZone: args.timeZone } : {}),
    };
  }
  if (args.everyMinutes !== undefined) {
    return { kind: 'interval' as const, everyMinutes: args.everyMinutes };
  }
  const resolved = resolveTime(args.at ?? '', now, zone);
  if ('problem' in resolved) throw new ToolInputError(resolved.problem);
  return { kind: 'once' as const, at: resolved.at.toISOString() };
}

function action(args: CreateArgs): ScheduleAction {
  if (args.remind !== undefined) return { type: 'remind', text: args.remind };
  if (args.prompt !== undefined) return { type: 'prompt', instruction: args.prompt };
  return { type: 'mission', objective: args.mission ?? '' };
}

// The scheduler's refusals (a bad cron rule, a time in the past, a limit reached, another
// user's or a missing schedule) are the model's to correct or to tell; anything else failed.
async function askScheduler<T>(request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    if (
      isBusError(error) &&
      (error.code === 'bad_request' || error.code === 'not_found' || error.code === 'conflict')
    ) {
      throw new ToolInputError(error.message);
    }
    throw error;
  }
}

// A schedule as the model reads it: the next run in the scheduler's words (in the schedule's
// zone), the rule in words it can repeat.
function shown(schedule: Schedule) {
  return {
    id: schedule.id,
    ...(schedule.name ? { name: schedule.name } : {}),
    action: schedule.action,
    rule:
      schedule.kind === 'cron'
        ? `cron "${schedule.cron}" in ${schedule.timeZone}`
        : schedule.kind === 'interval'
          ? `every ${schedule.everyMinutes} minutes`
          : 'once',
    status: schedule.status,
    // Null once it has ended.
    nextRun: schedule.nextRunText,
    nextRunAt: schedule.nextRunAt,
  };
}
