/**
 * The seccomp filter of sandboxed commands (bubblewrap only; see sandbox.ts): defense in
 * depth behind the namespaces. It denies, with EPERM, the system calls Docker's default
 * profile denies to a container without CAP_SYS_ADMIN, plus io_uring (moby has blocked it
 * by default since 2023). Everything else is allowed: this is a deny list, not Docker's
 * allow list, so a system call added by a future kernel is allowed until it is listed here.
 *
 * The program is classic BPF as the kernel takes it (`struct sock_filter`: u16 code, u8 jt,
 * u8 jf, u32 k; 8 bytes, little-endian on both architectures we build for), run over
 * `struct seccomp_data` (nr at offset 0, arch at offset 4). bwrap reads it from a file
 * descriptor (`--seccomp FD`) and installs it in the command just before `exec`, after its
 * own setup, with no_new_privs set.
 *
 * Node only (the runner's container), never Workers. No dependency: the numbers below are
 * the kernel's syscall tables (arch/x86/entry/syscalls/syscall_64.tbl and the generic table
 * aarch64 uses, include/uapi/asm-generic/unistd.h).
 */

/** The architectures we deploy the runner on, named as `process.arch` names them. */
export type SeccompArch = "x64" | "arm64";

/** AUDIT_ARCH_* of `seccomp_data.arch`. */
export const AUDIT_ARCH: Record<SeccompArch, number> = {
  x64: 0xc000003e, // AUDIT_ARCH_X86_64
  arm64: 0xc00000b7, // AUDIT_ARCH_AARCH64
};

export const SECCOMP_RET_KILL_PROCESS = 0x80000000;
export const SECCOMP_RET_ERRNO = 0x00050000;
export const SECCOMP_RET_ALLOW = 0x7fff0000;
export const EPERM = 1;
/** The answer to an fallocate that would hold blocks past the file's end (see KEEP_SIZE below). */
export const EOPNOTSUPP = 95;
/** x32 system calls on x86_64 have this bit set in nr. */
export const X32_SYSCALL_BIT = 0x40000000;

/**
 * The denied system calls, by reason: [x86_64 number, aarch64 number], null where the
 * architecture has no such call (it is then simply not in that program).
 */
const DENIED: { why: string; calls: Record<string, [number | null, number | null]> }[] = [
  {
    why: "mounts and namespaces: the sandbox's file system view and namespaces are bwrap's, fixed before exec",
    calls: {
      mount: [165, 40],
      umount2: [166, 39],
      pivot_root: [155, 41],
      move_mount: [429, 429],
      open_tree: [428, 428],
      open_tree_attr: [467, 467],
      fsopen: [430, 430],
      fsconfig: [431, 431],
      fsmount: [432, 432],
      fspick: [433, 433],
      mount_setattr: [442, 442],
      setns: [308, 268],
      unshare: [272, 97],
    },
  },
  {
    why: "kernel keyrings: not namespaced, shared with the host",
    calls: { add_key: [248, 217], keyctl: [250, 219], request_key: [249, 218] },
  },
  {
    why: "kernel modules and kexec: the host's kernel",
    calls: {
      init_module: [175, 105],
      finit_module: [313, 273],
      delete_module: [176, 106],
      create_module: [174, null],
      get_kernel_syms: [177, null],
      query_module: [178, null],
      kexec_load: [246, 104],
      kexec_file_load: [320, 294],
    },
  },
  {
    why: "large kernel attack surfaces with a record of privilege escalations: eBPF, perf, userfaultfd (stalls the kernel at will), io_uring",
    calls: {
      bpf: [321, 280],
      perf_event_open: [298, 241],
      userfaultfd: [323, 282],
      io_uring_setup: [425, 425],
      io_uring_enter: [426, 426],
      io_uring_register: [427, 427],
    },
  },
  {
    why: "the host's clock, time is not namespaced (adjtimex stays allowed, as in Docker: setting the clock needs CAP_SYS_TIME)",
    calls: { clock_settime: [227, 112], clock_adjtime: [305, 266], settimeofday: [164, 170] },
  },
  {
    why: "host administration: accounting, swap, reboot, quotas, the kernel log, the tty, fanotify",
    calls: {
      acct: [163, 89],
      swapon: [167, 224],
      swapoff: [168, 225],
      reboot: [169, 142],
      quotactl: [179, 60],
      quotactl_fd: [443, 443],
      syslog: [103, 116],
      vhangup: [153, 58],
      fanotify_init: [300, 262],
      nfsservctl: [180, 42],
    },
  },
  {
    why: "file handles bypass the mount view (the 'shocker' escape)",
    calls: { open_by_handle_at: [304, 265], name_to_handle_at: [303, 264] },
  },
  {
    why: "x86 I/O ports",
    calls: { iopl: [172, null], ioperm: [173, null] },
  },
  {
    why: "obsolete calls nothing needs (vm86 does not exist on x86_64)",
    calls: { uselib: [134, null], ustat: [136, null], sysfs: [139, null], _sysctl: [156, null], lookup_dcookie: [212, 18] },
  },
  {
    why: "kcmp (compares kernel objects: an information leak) and process_madvise (acts on another process's memory): needed by almost nothing; Docker allows them with ptrace on kernels >= 4.8, we are stricter",
    calls: { kcmp: [312, 272], process_madvise: [440, 440] },
  },
  {
    why: "NUMA memory policy and page migration (Docker: CAP_SYS_NICE)",
    calls: {
      mbind: [237, 235],
      get_mempolicy: [239, 236],
      set_mempolicy: [238, 237],
      set_mempolicy_home_node: [450, 450],
      move_pages: [279, 239],
      migrate_pages: [256, 238],
    },
  },
];
/**
 * fallocate's mode FALLOC_FL_KEEP_SIZE reserves blocks past the end of a file without changing its
 * size: `touch f; fallocate -n -l 70G f` held 70 GB of the runner's disk in one call, seen by
 * neither RLIMIT_FSIZE nor the disk quota (both go by the size), and the file (0 bytes) was written
 * back and kept in the warm slot. Such a call is answered EOPNOTSUPP, which callers take for "this
 * file system cannot" and fall back from; every other mode stays allowed: plain allocation (the
 * size grows: counted), punching a hole (PUNCH_HOLE always comes with KEEP_SIZE; it frees blocks).
 */
export const FALLOCATE: Record<SeccompArch, number> = { x64: 285, arm64: 47 };
const FALLOC_FL_KEEP_SIZE = 0x01;
const FALLOC_FL_PUNCH_HOLE = 0x02;
/** seccomp_data.args[1]'s low 32 bits (args at offset 16, 8 bytes each, little-endian): fallocate's mode. */
const ARG1_LOW = 24;

// Deliberately allowed: personality (some tools need it), ptrace (strace and gdb on the
// sandbox's own processes; since Linux 4.8 a tracer cannot bypass seccomp), clone and
// clone3 (clone3's flags sit in memory a filter cannot read; new namespaces fail anyway:
// bwrap's --disable-userns and a command without capabilities).

/** Denied system calls of `arch`: name → number. */
export function deniedSyscalls(arch: SeccompArch): Map<string, number> {
  const col = arch === "x64" ? 0 : 1;
  const out = new Map<string, number>();
  for (const group of DENIED) for (const [name, nrs] of Object.entries(group.calls)) if (nrs[col] !== null) out.set(name, nrs[col]!);
  return out;
}

// Classic BPF opcodes used here.
const BPF_LD_W_ABS = 0x20; // A = u32 at offset k of seccomp_data
const BPF_JEQ_K = 0x15; // pc += (A == k) ? jt : jf
const BPF_JGE_K = 0x35; // pc += (A >= k) ? jt : jf (unsigned)
const BPF_RET_K = 0x06; // return k
const BPF_AND_K = 0x54; // A &= k

type Target = number | "allow" | "deny" | "unsupported"; // a relative jump (0: next) or a label

/** The filter program for `arch`: an array of `struct sock_filter`, ready for `--seccomp`. */
export function seccompProgram(arch: SeccompArch): Buffer {
  if (!(arch in AUDIT_ARCH)) throw new Error(`no seccomp filter for architecture ${arch}`);
  const ins: { code: number; jt: Target; jf: Target; k: number }[] = [];
  const op = (code: number, k: number, jt: Target = 0, jf: Target = 0) => ins.push({ code, jt, jf, k });

  op(BPF_LD_W_ABS, 4); // arch
  op(BPF_JEQ_K, AUDIT_ARCH[arch], 1, 0);
  op(BPF_RET_K, SECCOMP_RET_KILL_PROCESS); // another ABI (32-bit x86 or arm): its numbers mean other calls
  op(BPF_LD_W_ABS, 0); // nr
  if (arch === "x64") {
    // The x32 ABI reaches the same kernel functions under nr | 0x40000000: refuse it whole.
    // nr -1 is let through: a tracer uses it to skip a call, and the kernel answers ENOSYS.
    op(BPF_JGE_K, X32_SYSCALL_BIT, 0, 1);
    op(BPF_JEQ_K, 0xffffffff, "allow", "deny");
  }
  // fallocate: refused only when it keeps the size without punching a hole (FALLOCATE above).
  op(BPF_JEQ_K, FALLOCATE[arch], 0, 3);
  op(BPF_LD_W_ABS, ARG1_LOW);
  op(BPF_AND_K, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE);
  op(BPF_JEQ_K, FALLOC_FL_KEEP_SIZE, "unsupported", "allow");
  for (const nr of [...deniedSyscalls(arch).values()].sort((a, b) => a - b)) op(BPF_JEQ_K, nr, "deny", 0);
  const allow = ins.length;
  op(BPF_RET_K, SECCOMP_RET_ALLOW);
  const deny = ins.length;
  op(BPF_RET_K, SECCOMP_RET_ERRNO | EPERM);
  const unsupported = ins.length;
  op(BPF_RET_K, SECCOMP_RET_ERRNO | EOPNOTSUPP);

  const buf = Buffer.alloc(ins.length * 8);
  ins.forEach((i, pc) => {
    // Jumps are relative to the next instruction and must fit in a byte.
    const rel = (t: Target) => {
      const r = t === "allow" ? allow - pc - 1 : t === "deny" ? deny - pc - 1 : t === "unsupported" ? unsupported - pc - 1 : t;
      if (r < 0 || r > 255) throw new Error("seccomp program: jump out of range");
      return r;
    };
    buf.writeUInt16LE(i.code, pc * 8);
    buf.writeUInt8(rel(i.jt), pc * 8 + 2);
    buf.writeUInt8(rel(i.jf), pc * 8 + 3);
    buf.writeUInt32LE(i.k >>> 0, pc * 8 + 4);
  });
  return buf;
}

/**
 * The program for this machine, or null on an architecture other than x64 and arm64 (the
 * ones we deploy): there the sandbox runs without a filter, behind its namespaces alone.
 */
export function hostSeccompProgram(): Buffer | null {
  return process.arch === "x64" || process.arch === "arm64" ? seccompProgram(process.arch) : null;
}
