// The Durable Streams Node reference server (`@durable-streams/server`), in memory, on the port
// given: what bench/fanout/run.mjs measures it as. Prints `listening <port>` once it is.
import { DurableStreamTestServer } from '@durable-streams/server';

const port = Number(process.argv[2]);
const server = new DurableStreamTestServer({ port, host: '127.0.0.1', compression: false });
await server.start();
console.log(`listening ${port}`);
process.on('SIGTERM', async () => {
  await server.stop?.();
  process.exit(0);
});
