// A real SMTP server on loopback for the browser tests: it speaks enough
// SMTP over TCP for Parley's mail client to deliver, and keeps every
// message with its quoted-printable undone, so links can be read.

import { createServer } from "node:net";

export function startSmtpSink() {
  const mails = [];
  const waiting = [];
  const server = createServer((socket) => {
    let buffer = "";
    let data = null;
    let mail = { to: [] };
    socket.write("220 sink ESMTP\r\n");
    socket.on("data", (chunk) => {
      buffer += chunk.toString("utf8");
      let at;
      while ((at = buffer.indexOf("\r\n")) >= 0) {
        const line = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        if (data !== null) {
          if (line === ".") {
            mail.data = unfold(data.join("\n"));
            mails.push(mail);
            waiting.splice(0).forEach((wake) => wake());
            mail = { to: [] };
            data = null;
            socket.write("250 kept\r\n");
          } else {
            data.push(line.startsWith("..") ? line.slice(1) : line);
          }
          continue;
        }
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === "EHLO" || verb === "HELO") socket.write("250-sink\r\n250 8BITMIME\r\n");
        else if (verb === "MAIL") socket.write("250 ok\r\n");
        else if (verb === "RCPT") {
          mail.to.push(line.replace(/^RCPT TO:\s*<?([^>]*)>?.*$/i, "$1"));
          socket.write("250 ok\r\n");
        } else if (verb === "DATA") {
          data = [];
          socket.write("354 go on\r\n");
        } else if (verb === "QUIT") {
          socket.end("221 bye\r\n");
        } else socket.write("250 ok\r\n");
      }
    });
    socket.on("error", () => {});
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `smtp://127.0.0.1:${server.address().port}`,
        close: () => server.close(),
        /** The next message to `to`, within 10 s. */
        async next(to) {
          const deadline = Date.now() + 10000;
          for (;;) {
            const found = mails.findIndex((m) => m.to.includes(to));
            if (found >= 0) return mails.splice(found, 1)[0];
            if (Date.now() > deadline) throw new Error(`no mail to ${to}`);
            await new Promise((wake) => {
              waiting.push(wake);
              setTimeout(wake, 200);
            });
          }
        },
      }),
    ),
  );
}

/** Quoted-printable undone: soft breaks joined, `=XX` decoded. */
function unfold(text) {
  return text.replace(/=\n/g, "").replace(/=([0-9A-F]{2})/g, (_, hex) => String.fromCharCode(parseInt(hex, 16)));
}
