//! The deadlines of a connection that hyper does not keep: one on each
//! request head, apart from the idle time between requests, and one on
//! writing, for clients that stop reading.
//!
//! Hyper's `header_read_timeout` starts as soon as a keep-alive connection
//! waits for its next request, so one setting would be both the time a
//! client may take to send its headers and the time an idle connection
//! stays open. Parley wants 10 s for the first and 60 s for the second: a
//! proxy in front keeps idle upstream connections for about a minute, and
//! closing them sooner makes it send requests into closing sockets. So
//! hyper's timer is set to the idle time, and this wrapper around the
//! connection's IO gives each request head its own, shorter deadline: it
//! starts when the connection opens, or when the first byte of the next
//! request arrives, and ends at the blank line that closes the head.
//!
//! It reads the bytes only to find that blank line, the one thing HTTP/1.1
//! framing guarantees there (empty lines before a request line are skipped,
//! as hyper skips them). Bytes that follow a head belong to its body until
//! a response has been written; the first bytes after a response start the
//! next head. An informational answer (`100 Continue`) is not a response.
//!
//! Writing: a response that makes no progress for the write timeout (the
//! client stopped reading and the socket's buffers are full) ends the
//! connection, so a client cannot pin a response, its memory and its slot
//! by never reading. A client that reads, however slowly, is not cut off,
//! and neither is a live stream that only writes now and then.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

enum State {
    /// Reading a request head; `newlines` counts the line ends just seen
    /// (a head ends at an empty line: `\n\n` or `\n\r\n`), once the request
    /// line has `started`.
    Head { started: bool, newlines: u8, after_cr: bool },
    /// The head is in; `responded` once a (final) response was written.
    Request { responded: bool },
}

pub(super) struct Deadlines<IO> {
    inner: IO,
    head_timeout: Duration,
    write_timeout: Duration,
    state: State,
    head_deadline: Pin<Box<Sleep>>,
    /// Armed while a write waits for room in the socket.
    write_deadline: Option<Pin<Box<Sleep>>>,
}

impl<IO> Deadlines<IO> {
    pub(super) fn new(inner: IO, head_timeout: Duration, write_timeout: Duration) -> Self {
        Self {
            inner,
            head_timeout,
            write_timeout,
            state: State::Head { started: false, newlines: 0, after_cr: false },
            head_deadline: Box::pin(tokio::time::sleep(head_timeout)),
            write_deadline: None,
        }
    }

    /// Follows the bytes a client sent.
    fn observe(&mut self, bytes: &[u8]) {
        if let State::Request { responded: true } = self.state {
            self.state = State::Head { started: false, newlines: 0, after_cr: false };
            self.head_deadline.as_mut().reset(Instant::now() + self.head_timeout);
        }
        let State::Head { started, newlines, after_cr } = &mut self.state else { return };
        let mut rest = bytes;
        if !*started {
            match rest.iter().position(|&b| b != b'\r' && b != b'\n') {
                Some(first) => rest = &rest[first..],
                None => return,
            }
            *started = true;
        }
        loop {
            if *newlines == 0 {
                // Inside a line: only its end matters.
                let Some(end) = memchr::memchr(b'\n', rest) else { return };
                rest = &rest[end + 1..];
                *newlines = 1;
                *after_cr = false;
                continue;
            }
            let Some((&b, tail)) = rest.split_first() else { return };
            rest = tail;
            match b {
                b'\n' => {
                    self.state = State::Request { responded: false };
                    return;
                }
                b'\r' if !*after_cr => *after_cr = true,
                _ => {
                    *newlines = 0;
                    *after_cr = false;
                }
            }
        }
    }

    /// Follows what the server wrote: a final response ends the request.
    fn wrote(&mut self, bytes: &[u8]) {
        if let State::Request { responded } = &mut self.state
            && !bytes.is_empty()
            && !bytes.starts_with(b"HTTP/1.1 1")
        {
            *responded = true;
        }
    }

    /// Follows a write's progress: a write that waits arms the write
    /// deadline, one that goes through disarms it.
    fn write_progress<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
        moved: impl FnOnce(&T) -> bool,
    ) -> Poll<io::Result<T>> {
        match &polled {
            Poll::Ready(Ok(n)) if moved(n) => self.write_deadline = None,
            Poll::Pending => {
                let timeout = self.write_timeout;
                let deadline = self.write_deadline.get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                if deadline.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "the client stopped reading")));
                }
            }
            _ => {}
        }
        polled
    }
}

fn timed_out() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "the request head did not arrive in time")
}

impl<IO: AsyncRead + Unpin> AsyncRead for Deadlines<IO> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if matches!(this.state, State::Head { .. }) && this.head_deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(timed_out()));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let filled = buf.filled();
            if filled.len() > before {
                this.observe(&filled[before..]);
            }
        }
        polled
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Deadlines<IO> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            this.wrote(&buf[..n]);
        }
        this.write_progress(cx, polled, |n| *n > 0)
    }

    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = polled
            && n > 0
            && let Some(first) = bufs.iter().find(|b| !b.is_empty())
        {
            this.wrote(first);
        }
        this.write_progress(cx, polled, |n| *n > 0)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_flush(cx);
        this.write_progress(cx, polled, |()| true)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt, duplex};

    use super::*;

    const HEAD: Duration = Duration::from_secs(10);
    const WRITE: Duration = Duration::from_secs(30);

    fn wrap(io: tokio::io::DuplexStream) -> Deadlines<tokio::io::DuplexStream> {
        Deadlines::new(io, HEAD, WRITE)
    }

    async fn read_some(io: &mut Deadlines<tokio::io::DuplexStream>) -> io::Result<usize> {
        let mut buf = [0u8; 256];
        io.read(&mut buf).await
    }

    #[tokio::test(start_paused = true)]
    async fn a_head_that_stalls_times_out() {
        let (mut client, server) = duplex(1024);
        let mut io = wrap(server);
        client.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").await.unwrap();
        assert!(read_some(&mut io).await.is_ok());
        let err = read_some(&mut io).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test(start_paused = true)]
    async fn once_the_head_is_in_the_request_and_the_idle_time_have_no_deadline_here() {
        let (mut client, server) = duplex(1024);
        let mut io = wrap(server);
        client.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
        read_some(&mut io).await.unwrap();
        io.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").await.unwrap();
        // Idle far past the head deadline: hyper's own timer governs that.
        let idle = tokio::time::timeout(Duration::from_secs(100), read_some(&mut io)).await;
        assert!(idle.is_err(), "still waiting, not failed");
        // The next request's head gets a fresh deadline from its first byte.
        client.write_all(b"GET /next HTTP/1.1\r\n").await.unwrap();
        read_some(&mut io).await.unwrap();
        assert_eq!(read_some(&mut io).await.unwrap_err().kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test(start_paused = true)]
    async fn body_bytes_and_informational_answers_do_not_start_a_head() {
        let (mut client, server) = duplex(1024);
        let mut io = wrap(server);
        client.write_all(b"POST / HTTP/1.1\nContent-Length: 4\nExpect: 100-continue\n\n").await.unwrap();
        read_some(&mut io).await.unwrap();
        io.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await.unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
        client.write_all(b"body").await.unwrap();
        assert_eq!(read_some(&mut io).await.unwrap(), 4, "a slow body is the body deadline's business");
    }

    /// The end of a head is found however the bytes are split, with bare
    /// `\n` line ends too, and a lone `\r` inside a line does not end it.
    #[test]
    fn the_blank_line_is_found_across_any_split() {
        let heads: [&[u8]; 3] =
            [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"\r\nGET / HTTP/1.1\nHost: x\n\n", b"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n"];
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let _guard = rt.enter();
        for head in heads {
            for split in 1..head.len() {
                let (_, server) = duplex(16);
                let mut io = wrap(server);
                for chunk in head.chunks(split) {
                    assert!(matches!(io.state, State::Head { .. }), "ended early: {head:?} split {split}");
                    io.observe(chunk);
                }
                assert!(matches!(io.state, State::Request { responded: false }), "not ended: {head:?} split {split}");
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn empty_lines_before_the_request_line_do_not_end_the_head() {
        let (mut client, server) = duplex(1024);
        let mut io = wrap(server);
        client.write_all(b"\r\n\r\n\n\nGET / HTTP/1.1\r\nHost: x\r\n").await.unwrap();
        let mut buf = [0u8; 256];
        assert!(io.read(&mut buf).await.is_ok());
        assert_eq!(io.read(&mut buf).await.unwrap_err().kind(), io::ErrorKind::TimedOut, "still a head, still under its deadline");
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_stops_reading_is_cut_off_and_a_slow_reader_is_not() {
        let (mut client, server) = duplex(64);
        let mut io = wrap(server);
        client.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        assert!(read_some(&mut io).await.unwrap() > 0);
        // A slow reader: 64 bytes every 20 s keeps the write moving.
        let reader = tokio::spawn(async move {
            let mut chunk = [0u8; 64];
            for _ in 0..4 {
                tokio::time::sleep(Duration::from_secs(20)).await;
                let _ = client.read(&mut chunk).await;
            }
            client
        });
        io.write_all(&[b'x'; 256]).await.expect("a slow reader gets its answer");
        let _client = reader.await.unwrap();
        // Nobody reads any more: the next write stalls and times out.
        let err = io.write_all(&[b'y'; 1024]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    }
}
