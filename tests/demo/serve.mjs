// Starting and stopping the `twoplane` binary for the end-to-end tests of this folder:
// `twoplane serve` with the given arguments, resolved once it logs the address it listens on (it
// binds port 0), and rejected with everything it logged when it exits first or takes longer than
// 20 s; stopped with SIGTERM (its drain), then SIGKILL if it is still running 10 s later.
import { spawn } from 'node:child_process';

/** `{ child, addr }` of a started `twoplane serve ...args` (`bin` is the binary's path). */
export function startServer(bin, args) {
  let log = '';
  return new Promise((resolveStart, rejectStart) => {
    const child = spawn(bin, ['serve', ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, RUST_LOG: 'info' } });
    const timer = setTimeout(() => rejectStart(new Error(`the server did not start:\n${log}`)), 20_000);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      log += chunk;
      const m = /listening addr=(\S+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolveStart({ child, addr: m[1] });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      rejectStart(new Error(`the server exited with ${code}:\n${log}`));
    });
  });
}

/** Stop a server `startServer` started (nothing when it already exited or never started). */
export async function stopServer(child) {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  // The timer is cleared once the server exits: a pending one would keep the test process alive.
  let timer;
  await Promise.race([exited, new Promise((r) => { timer = setTimeout(r, 10_000); })]);
  clearTimeout(timer);
  if (child.exitCode === null) child.kill('SIGKILL');
}
