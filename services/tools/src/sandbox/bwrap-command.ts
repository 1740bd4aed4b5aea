import { existsSync } from 'node:fs';
import { join } from 'node:path';

export type SandboxLanguage = 'python' | 'javascript' | 'shell';

export type SandboxLimits = {
  cpuSeconds: number;
  wallMs: number;
  memoryBytes: number;
  processes: number;
  outputBytes: number;
  diskBytes: number;
};

// Where a run directory's parts are on the host; each is bound into the box.
export type RunDirLayout = {
  workspaceDir: string;
  scratchDir: string;
  codeDir: string;
  etcDir: string;
};

// The host user bwrap runs as when the service is root; unset when it is not.
export type HostUser = { uid: number; gid: number };

// Inside the box the code runs as this id, whatever host user bwrap runs as.
const BOX_UID = 1000;
const CODE_DIR_IN_BOX = '/run/code';

export const CODE_FILE: Record<SandboxLanguage, string> = {
  python: 'main.py',
  javascript: 'main.js',
  shell: 'main.sh',
};

const BOX_ENV: Record<string, string> = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  HOME: '/tmp',
  TMPDIR: '/tmp',
  LANG: 'C.UTF-8',
  MPLBACKEND: 'Agg',
  MPLCONFIGDIR: '/tmp/.matplotlib',
  // One thread per BLAS call: each thread counts against the box's process limit.
  OPENBLAS_NUM_THREADS: '1',
  OMP_NUM_THREADS: '1',
  PYTHONDONTWRITEBYTECODE: '1',
};

// What Python, matplotlib and fontconfig read from /etc. Nothing else of the host's /etc is
// seen: no shadow, hosts, resolv.conf or the service's own configuration.
const HOST_ETC_ENTRIES = [
  '/etc/alternatives',
  '/etc/fonts',
  '/etc/ld.so.cache',
  '/etc/localtime',
  '/etc/matplotlibrc',
  '/etc/mime.types',
];

export const BOX_PASSWD = `sandbox:x:${BOX_UID}:${BOX_UID}:sandbox:/tmp:/bin/sh\n`;
export const BOX_GROUP = `sandbox:x:${BOX_UID}:\n`;

// The interpreter and its arguments, resolved on the box's PATH. Node's heap is capped below the
// data limit so that a heap bomb ends with V8's "JavaScript heap out of memory" rather than a
// segfault when malloc first fails; module detection lets code written as an ES module (import,
// top-level await) run as well as CommonJS.
export function interpreterCommand(
  language: SandboxLanguage,
  memoryBytes: number,
  shell: string,
): string[] {
  const file = `${CODE_DIR_IN_BOX}/${CODE_FILE[language]}`;
  if (language === 'python') return ['python3', file];
  if (language === 'javascript') {
    const heapMb = Math.max(16, Math.floor((memoryBytes * 3) / 4 / 1_048_576));
    return ['node', '--experimental-detect-module', `--max-old-space-size=${heapMb}`, file];
  }
  return [shell, file];
}

// bash when the system has it (scripts written for it are the common case), else POSIX sh.
export function boxShell(): string {
  return existsSync('/usr/bin/bash') ? 'bash' : 'sh';
}

// rlimits are set by prlimit INSIDE the box, after bwrap made its user namespace: there
// RLIMIT_NPROC counts only this box's processes, whereas set before bwrap it would count every
// process of the host user (the service's own threads, other boxes). Memory is RLIMIT_DATA, not
// RLIMIT_AS: V8 reserves far more address space than it uses, so an address-space limit kills
// Node at start. The CPU hard limit is one second above the soft one so that the kernel's
// SIGXCPU (which names the limit) comes before its SIGKILL.
function prlimitArguments(limits: SandboxLimits): string[] {
  return [
    'prlimit',
    `--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`,
    `--nproc=${limits.processes}`,
    `--data=${limits.memoryBytes}`,
    `--fsize=${limits.diskBytes}`,
    '--nofile=1024',
    '--core=0',
    '--',
  ];
}

function hostEtcBinds(): string[] {
  return HOST_ETC_ENTRIES.filter((path) => existsSync(path)).flatMap((path) => [
    '--ro-bind',
    path,
    path,
  ]);
}

function boxEnvArguments(): string[] {
  return Object.entries(BOX_ENV).flatMap(([name, value]) => ['--setenv', name, value]);
}

// The bwrap arguments of one run. Mount order matters: the read-only remounts of / and /dev
// come after every mount point has been made in them, and /dev/shm is its own small tmpfs so
// that the read-only /dev leaves Python's multiprocessing its semaphores. Without the remounts
// the box could fill bwrap's root tmpfs, which is memory that no limit counts.
export function bwrapArguments(
  layout: RunDirLayout,
  limits: SandboxLimits,
  command: string[],
): string[] {
  return [
    '--unshare-all',
    '--unshare-user',
    '--disable-userns',
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    '--ro-bind',
    '/usr',
    '/usr',
    ...['bin', 'lib', 'lib64', 'sbin'].flatMap((name) => ['--symlink', `usr/${name}`, `/${name}`]),
    ...hostEtcBinds(),
    '--ro-bind',
    join(layout.etcDir, 'passwd'),
    '/etc/passwd',
    '--ro-bind',
    join(layout.etcDir, 'group'),
    '/etc/group',
    '--ro-bind',
    layout.codeDir,
    CODE_DIR_IN_BOX,
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--size',
    String(Math.floor(limits.memoryBytes / 8)),
    '--tmpfs',
    '/dev/shm',
    '--bind',
    layout.scratchDir,
    '/tmp',
    '--bind',
    layout.workspaceDir,
    '/workspace',
    '--remount-ro',
    '/dev',
    '--remount-ro',
    '/',
    '--chdir',
    '/workspace',
    '--clearenv',
    ...boxEnvArguments(),
    '--uid',
    String(BOX_UID),
    '--gid',
    String(BOX_UID),
    ...prlimitArguments(limits),
    ...command,
  ];
}

// The host command. As root, bwrap is first dropped to the sandbox user, so that it runs
// unprivileged exactly as in the container, where the service is not root. Not root, its ambient
// capabilities are cleared first: podman hands a non-root user the container's cap_add ones
// (SYS_CHROOT, for Chromium) as ambient, and bwrap, not being setuid, refuses to start with
// capabilities it did not expect. No --hostname in the box for the same container: sethostname
// needs CAP_SYS_ADMIN under podman's and Docker's seccomp profiles, so the box keeps the
// container's name in its own UTS namespace.
export function hostCommand(bwrap: string, hostUser: HostUser | undefined, args: string[]) {
  const drop = hostUser
    ? [`--reuid=${hostUser.uid}`, `--regid=${hostUser.gid}`, '--clear-groups']
    : ['--ambient-caps', '-all'];
  return { file: 'setpriv', args: [...drop, '--', bwrap, ...args] };
}
