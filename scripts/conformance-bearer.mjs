// The MCP conformance suite's client, with hub's token: a loopback proxy
// that forwards every request to hub unchanged but for an added
// "Authorization: Bearer <token>" (the suite's server mode has no option
// to send a header). Host, Origin and every other header pass through, so
// hub's own checks (token, cross-origin, DNS rebinding) decide as they
// would for any client that holds the token.
//
//   node conformance-bearer.mjs UPSTREAM_URL TOKEN_FILE
//
// Prints the URL it listens on (127.0.0.1, a free port), then serves until
// killed.
import http from 'node:http';
import { readFileSync } from 'node:fs';

const [upstream, tokenFile] = process.argv.slice(2);
if (!upstream || !tokenFile) {
  console.error('usage: node conformance-bearer.mjs UPSTREAM_URL TOKEN_FILE');
  process.exit(2);
}
const up = new URL(upstream);
const token = readFileSync(tokenFile, 'utf8').trim();

const server = http.createServer((req, res) => {
  const out = http.request(
    {
      host: up.hostname,
      port: up.port,
      method: req.method,
      path: req.url,
      headers: { ...req.headers, authorization: `Bearer ${token}` },
    },
    (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      res.flushHeaders(); // an SSE stream may say nothing for a while
      answer.pipe(res);
    },
  );
  out.on('error', (err) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
    res.end(`conformance-bearer: ${err.message}\n`);
  });
  res.on('close', () => out.destroy()); // the suite hung up: so does hub's stream
  req.pipe(out);
});
server.listen(0, '127.0.0.1', () => {
  console.log(`http://127.0.0.1:${server.address().port}/`);
});
