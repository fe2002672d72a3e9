// A fetch `Response` (what the SDK's `createUIMessageStreamResponse` returns) written to a Node
// response, as the route of a node:http server writes it. The page's transport drops the route's
// body once it has the headers (it reads from twoplane), so a client that goes away stops this
// copy only: the copy going to twoplane is a separate branch of the stream and goes on.

/** Write `response` to the Node response `res`, stopping its body when the client goes away. */
export async function respond(res, response) {
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (!response.body) return void res.end();
  const reader = response.body.getReader();
  res.on('close', () => reader.cancel().catch(() => {}));
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      res.write(value);
    }
  } catch {
    // the client went away
  }
  res.end();
}
