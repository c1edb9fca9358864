// A webhook receiver in its own process for the relay benchmarks (docs/performance.md):
// a plain Node.js `http` server on 127.0.0.1 that answers every request 200 at once.
//
//   node bench/receiver.js PORT_FILE [ARRIVALS_FILE]
//
// It listens on a free port and writes that port to PORT_FILE once it accepts connections.
// With ARRIVALS_FILE, every POST's arrival is appended to it as a line
// "<epoch microseconds on this machine's clock>\t<webhook-id header>", for the latency
// bench; the line is written after the answer, so the record costs the sender nothing.
// GET /stats answers {"received": N, "first_us": T, "last_us": T} for the POSTs since the
// last /stats (the arrival times of the first and the last) and starts counting again.
// SIGTERM or SIGINT: the arrivals are flushed and the process exits 0.
'use strict';
const fs = require('fs');
const http = require('http');

const [portFile, arrivalsFile] = process.argv.slice(2);
if (!portFile) {
  console.error('usage: node receiver.js PORT_FILE [ARRIVALS_FILE]');
  process.exit(2);
}

// performance.timeOrigin + now(): the wall clock at microsecond resolution, the clock that
// PostgreSQL's clock_timestamp() reads on the same machine.
const { performance } = require('perf_hooks');
const epochMicros = () => Math.round((performance.timeOrigin + performance.now()) * 1000);

const arrivals = arrivalsFile ? fs.createWriteStream(arrivalsFile) : null;
let received = 0;
let total = 0;
let first = 0;
let last = 0;

const server = http.createServer((request, response) => {
  if (request.method === 'GET' && request.url === '/stats') {
    response.writeHead(200, { 'Content-Type': 'application/json' });
    response.end(JSON.stringify({ received, first_us: first, last_us: last }));
    received = 0;
    return;
  }
  const arrived = epochMicros();
  if (received === 0) first = arrived;
  last = arrived;
  // The body is read (and dropped) so that the connection can carry the next request.
  request.on('data', () => {});
  request.on('end', () => {
    received += 1;
    total += 1;
    response.writeHead(200, { 'Content-Length': '0' });
    response.end();
    if (arrivals) arrivals.write(`${arrived}\t${request.headers['webhook-id'] || ''}\n`);
  });
});
server.keepAliveTimeout = 60000;
server.headersTimeout = 65000;

server.listen(0, '127.0.0.1', () => {
  fs.writeFileSync(portFile, `${server.address().port}\n`);
});

const stop = () => {
  server.close();
  const done = () => {
    console.error(`receiver: ${total} requests`);
    process.exit(0);
  };
  if (arrivals) arrivals.end(done);
  else done();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
