// Preloaded (NODE_OPTIONS=--import) into every node process of a command that must stay offline
// (test/contract/build.test.ts runs `npm run package` under it). Any TCP connection — to the
// internet, a proxy, or the instance metadata service an AWS SDK tries for credentials — is
// refused and written to NO_NETWORK_LOG, which the test expects to stay empty. Unix sockets pass.
import { appendFileSync } from 'node:fs';
import net from 'node:net';

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...args) {
  const opts =
    args[0] !== null && typeof args[0] === 'object'
      ? Array.isArray(args[0])
        ? args[0][0]
        : args[0]
      : { port: args[0], host: args[1] };
  // A Unix socket has a path and no port (HTTP agents pass the request's path along with the port).
  if (
    opts &&
    !(typeof opts.path === 'string' && (opts.port === undefined || opts.port === null)) &&
    typeof args[0] !== 'string'
  ) {
    const where = `${opts.host ?? 'localhost'}:${opts.port}`;
    appendFileSync(
      process.env.NO_NETWORK_LOG,
      `${process.pid} ${process.argv.slice(1).join(' ')} → ${where}\n${new Error('connect').stack}\n`,
    );
    // Fail as a refused connection would: asynchronously, on the socket.
    const err = Object.assign(new Error(`no network here: connect to ${where} refused by test/no-network.mjs`), {
      code: 'ECONNREFUSED',
    });
    process.nextTick(() => this.destroy(err));
    return this;
  }
  return connect.apply(this, args);
};
