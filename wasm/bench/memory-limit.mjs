// A memory limit for one browser of the memory bench: a Linux memory cgroup that holds the
// browser's processes (the browser, its renderers, GPU and utility processes: every child
// inherits it), standing in for a device with that much memory, so that the bench finds the
// set at which the kernel kills the renderer without the hours a set near this machine's own
// memory takes.  Needs root and a memory cgroup: version 1 (/sys/fs/cgroup/memory) or a
// version 2 hierarchy that offers the memory controller.  Swap, if any, is limited too (to
// none past the limit).
import { chmodSync, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const V1 = '/sys/fs/cgroup/memory';
const V2 = '/sys/fs/cgroup';

function hierarchy() {
  if (existsSync(path.join(V1, 'memory.limit_in_bytes'))) return { v: 1, root: V1 };
  try {
    if (readFileSync(path.join(V2, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('memory')) return { v: 2, root: V2 };
  } catch { /* none */ }
  return null;
}

// Creates the group `name` limited to `bytes` and a launcher in `dir` that enters it and
// runs `executable`.  Returns { launcher, kills(), peak(), close() }: kills() counts the
// processes the kernel killed for the limit so far, peak() is the most memory the group has
// been charged (the browser's processes together, shared pages once), each null where the
// kernel does not say.  Throws an Error saying what is missing.
export function memoryLimit(bytes, name, dir, executable) {
  const h = hierarchy();
  if (h === null) {
    throw new Error('--limit-bytes needs a memory cgroup (Linux: /sys/fs/cgroup/memory, or cgroup v2 with the memory controller)');
  }
  const group = path.join(h.root, name);
  try {
    mkdirSync(group);
  } catch (e) {
    throw new Error(`--limit-bytes: cannot create the memory cgroup ${group} (${e.code}; it needs root)`);
  }
  const write = (file, value) => writeFileSync(path.join(group, file), String(value));
  if (h.v === 1) {
    write('memory.limit_in_bytes', bytes);
    if (existsSync(path.join(group, 'memory.memsw.limit_in_bytes'))) write('memory.memsw.limit_in_bytes', bytes);
  } else {
    write('memory.max', bytes);
    if (existsSync(path.join(group, 'memory.swap.max'))) write('memory.swap.max', 0);
  }
  const launcher = path.join(dir, 'browser-in-limit.sh');
  const q = (s) => `'${s.replaceAll("'", "'\\''")}'`;
  writeFileSync(launcher, `#!/bin/sh\necho $$ > ${q(path.join(group, 'cgroup.procs'))} || exit 1\nexec ${q(executable)} "$@"\n`);
  chmodSync(launcher, 0o700);
  const kills = () => {
    try {
      const file = h.v === 1 ? 'memory.oom_control' : 'memory.events';
      const m = /^oom_kill (\d+)$/m.exec(readFileSync(path.join(group, file), 'utf8'));
      return m ? Number(m[1]) : null;
    } catch { return null; }
  };
  const peak = () => {
    try {
      return Number(readFileSync(path.join(group, h.v === 1 ? 'memory.max_usage_in_bytes' : 'memory.peak'), 'utf8'));
    } catch { return null; }
  };
  // The group can go once its processes have: retried while the browser's last ones exit.
  const close = async () => {
    for (let i = 0; i < 50; i++) {
      try { rmdirSync(group); return; } catch (e) {
        if (e.code === 'ENOENT') return;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    console.error(`memory bench: could not remove the memory cgroup ${group}`);
  };
  return { launcher, kills, peak, close };
}
