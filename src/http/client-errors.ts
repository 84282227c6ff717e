/**
 * Errors Node's HTTP parser raises before Express sees a request (malformed framing, headers
 * too large, a request that did not arrive within HTTP_HEADERS_TIMEOUT_MS /
 * HTTP_REQUEST_TIMEOUT_MS): answered in the usual JSON error shape, then the connection closed.
 */
import { STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { HTTP_ERRORS, type HttpCode } from './error-codes.js';

const ANSWERS: Record<string, [HttpCode, string]> = {
  HPE_HEADER_OVERFLOW: ['headers_too_large', 'the request headers are too large'],
  ERR_HTTP_REQUEST_TIMEOUT: ['request_timeout', 'the request did not arrive in time'],
};

export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const [code, message] = ANSWERS[err.code ?? ''] ?? ['bad_request', 'the request is not valid HTTP'];
    const status = HTTP_ERRORS[code].status;
    const reason = STATUS_CODES[status] ?? '';
    const body = JSON.stringify({ error: { code, message } });
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
