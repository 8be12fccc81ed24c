//! hyper's own answers, in the API's error shape.
//!
//! A few HTTP/1 requests never reach the router: hyper answers them itself,
//! with an empty body, when it cannot read the request head at all — a
//! request target over 65,534 bytes (414; a limit hyper has built in, far
//! above the server's own [`MAX_URI_BYTES`](crate::MAX_URI_BYTES), which the
//! router answers), a head over hyper's buffer or with more than 100 headers
//! (431), or one that is not HTTP (400). Then it closes the connection.
//!
//! [`JsonHeadErrors`] sits between hyper and the connection and gives those
//! answers the body every other error has, `{"error": "...", "field":
//! null}`, with the same security headers. It recognises them by what only
//! they are: a write that is exactly hyper's own error head, byte for byte
//! as hyper writes it (`HTTP/1.1 414 URI Too Long`, `connection: close`,
//! `content-length: 0`, `date: ...`, the blank line; nothing before it and
//! nothing after it), and that is not the rest of a write the connection
//! took only part of. hyper writes that head only between responses, alone;
//! all other bytes pass untouched. A body can hold the same text (the page
//! echoes what a client sends), and a slow reader can make a write start in
//! the middle of a body, but the rest of a partial write is never
//! rewritten, so the framing stays hyper's. HTTP/2 frames never start with
//! `HTTP/`, so an h2 connection passes through untouched.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::guard::edge::{MAX_HEADER_BYTES, MAX_URI_BYTES};

/// An I/O stream whose writes of hyper's own error answers are rewritten
/// (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct JsonHeadErrors<I> {
    inner: I,
    /// A rewritten answer being written: its bytes, how many are out, and
    /// how many bytes of hyper's it stands for.
    pending: Option<(Vec<u8>, usize, usize)>,
    /// The last write took only part of what it was given: the next one
    /// is the rest of it (of a head or a body), never a head of its own.
    partial: bool,
}

impl<I> JsonHeadErrors<I> {
    pub(crate) fn new(inner: I) -> JsonHeadErrors<I> {
        JsonHeadErrors {
            inner,
            pending: None,
            partial: false,
        }
    }
}

/// The statuses hyper answers itself (`on_error` in hyper's `proto::h1::role`),
/// with the reason it writes.
const HYPER_HEADS: [(u16, &str); 3] = [
    (400, "400 Bad Request"),
    (414, "414 URI Too Long"),
    (431, "431 Request Header Fields Too Large"),
];

/// The length of the value of the `date` header hyper writes
/// (`Tue, 01 Dec 2026 07:00:00 GMT`).
const DATE_LEN: usize = 29;

/// The status and the date of `buf` if it is exactly a head hyper writes
/// for a request it cannot read: `HTTP/1.1 <status> <reason>\r\n`,
/// optionally `connection: close\r\n`, `content-length: 0\r\n`,
/// optionally `date: <29 bytes>\r\n`, and the blank line, with nothing
/// after it.
fn hyper_head(buf: &[u8]) -> Option<(u16, &str, Option<&str>)> {
    let rest = buf.strip_prefix(b"HTTP/1.1 ")?;
    let (status, status_line) = HYPER_HEADS
        .into_iter()
        .find(|(_, line)| rest.starts_with(line.as_bytes()))?;
    let rest = rest[status_line.len()..].strip_prefix(b"\r\n")?;
    // hyper closes the connection after it, and says so.
    let rest = rest.strip_prefix(b"connection: close\r\n").unwrap_or(rest);
    let rest = rest.strip_prefix(b"content-length: 0\r\n")?;
    if rest == b"\r\n" {
        return Some((status, status_line, None));
    }
    let date = rest.strip_prefix(b"date: ")?.strip_suffix(b"\r\n\r\n")?;
    if date.len() != DATE_LEN || date.contains(&b'\r') {
        return None;
    }
    Some((status, status_line, Some(std::str::from_utf8(date).ok()?)))
}

/// The JSON answer for a head hyper wrote itself, or `None` if `buf` is
/// not exactly one ([`hyper_head`]).
fn rewrite(buf: &[u8]) -> Option<Vec<u8>> {
    // Every write of every response passes here: anything that does not
    // start like a 4xx head is let through at the first bytes.
    if buf.get(..10) != Some(b"HTTP/1.1 4") {
        return None;
    }
    let (status, status_line, date) = hyper_head(buf)?;
    let message = match status {
        414 => {
            format!("the request target is over 65534 bytes; at most {MAX_URI_BYTES} are accepted")
        }
        431 => format!(
            "the request head is too large or has too many headers; \
             at most {MAX_HEADER_BYTES} bytes of headers are accepted"
        ),
        _ => "the request cannot be read as HTTP/1.1".to_owned(),
    };
    let body = serde_json::json!({ "error": message, "field": null }).to_string();
    let mut out = format!(
        "HTTP/1.1 {status_line}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nx-content-type-options: nosniff\r\n\
         referrer-policy: no-referrer\r\nconnection: close\r\n",
        body.len(),
    );
    if let Some(date) = date {
        out.push_str(&format!("date: {date}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(&body);
    Some(out.into_bytes())
}

impl<I: AsyncWrite + Unpin> JsonHeadErrors<I> {
    /// Writes the rest of a rewritten answer; ready with the length of
    /// hyper's bytes it replaced once all of it is out.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        while let Some((bytes, written, replaced)) = &mut self.pending {
            if *written == bytes.len() {
                let replaced = *replaced;
                self.pending = None;
                return Poll::Ready(Ok(replaced));
            }
            match Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => *written += n,
                other => return other,
            }
        }
        Poll::Ready(Ok(0))
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for JsonHeadErrors<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for JsonHeadErrors<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.pending.is_none() {
            match rewrite(buf).filter(|_| !this.partial) {
                Some(answer) => this.pending = Some((answer, 0, buf.len())),
                None => {
                    let written = ready!(Pin::new(&mut this.inner).poll_write(cx, buf))?;
                    this.partial = written < buf.len();
                    return Poll::Ready(Ok(written));
                }
            }
        }
        this.poll_pending(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.pending.is_none() {
            // hyper's head is alone in its write: one slice with bytes.
            let mut full = bufs.iter().filter(|b| !b.is_empty());
            let alone = match (full.next(), full.next()) {
                (Some(head), None) if !this.partial => Some(head),
                _ => None,
            };
            match alone.and_then(|b| rewrite(b).map(|answer| (answer, b.len()))) {
                Some((answer, len)) => this.pending = Some((answer, 0, len)),
                None => {
                    let written = ready!(Pin::new(&mut this.inner).poll_write_vectored(cx, bufs))?;
                    this.partial = written < bufs.iter().map(|b| b.len()).sum();
                    return Poll::Ready(Ok(written));
                }
            }
        }
        this.poll_pending(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// hyper's head for a request target it cannot take, as it writes it.
    const HYPER_414: &[u8] = b"HTTP/1.1 414 URI Too Long\r\nconnection: close\r\n\
                               content-length: 0\r\ndate: Tue, 01 Dec 2026 07:00:00 GMT\r\n\r\n";

    #[test]
    fn hypers_own_answers_get_the_error_shape() {
        let out = String::from_utf8(rewrite(HYPER_414).unwrap()).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{head}");
        assert!(head.contains("content-type: application/json"), "{head}");
        assert!(head.contains("x-content-type-options: nosniff"), "{head}");
        assert!(
            head.contains("date: Tue, 01 Dec 2026 07:00:00 GMT"),
            "{head}"
        );
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{head}"
        );
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert!(v["error"].as_str().unwrap().contains("8192"), "{body}");
        assert!(v["field"].is_null(), "{body}");
        for status in ["400 Bad Request", "431 Request Header Fields Too Large"] {
            let hyper = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n");
            assert!(rewrite(hyper.as_bytes()).is_some(), "{status}");
        }
    }

    #[test]
    fn the_routers_answers_and_other_bytes_pass() {
        for passes in [
            // The router's own 414, with its body and headers.
            &b"HTTP/1.1 414 URI Too Long\r\ncontent-type: application/json\r\n\
               x-content-type-options: nosniff\r\ncontent-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 414 URI Too Long\r\nX-Content-Type-Options: nosniff\r\n\
               Content-Length: 0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 204 No Content\r\n\r\n",
            b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 12\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n",
            // Not as hyper writes it: another case, version, header,
            // reason or date, or bytes after the blank line.
            b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.0 400 Bad Request\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 400 Oops\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nx: y\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\nconnection: keep-alive\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\ndate: today\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n</li></ul>",
            b"{\"ids\":[\"1\"]}",
            b"\x00\x00\x12\x04\x00\x00\x00\x00\x00",
        ] {
            assert!(
                rewrite(passes).is_none(),
                "{}",
                String::from_utf8_lossy(passes)
            );
        }
        let mut then_more = HYPER_414.to_vec();
        then_more.extend_from_slice(b"<li>");
        assert!(rewrite(&then_more).is_none());
    }

    /// A connection that takes at most `take[i]` bytes on its i-th write
    /// (then everything), as a socket with a slow reader does, and keeps
    /// what it is given.
    struct Slow {
        take: Vec<usize>,
        writes: usize,
        out: Vec<u8>,
        vectored: bool,
    }

    impl Slow {
        fn new(take: &[usize], vectored: bool) -> Slow {
            Slow {
                take: take.to_vec(),
                writes: 0,
                out: Vec::new(),
                vectored,
            }
        }
        fn room(&mut self) -> usize {
            let room = self.take.get(self.writes).copied().unwrap_or(usize::MAX);
            self.writes += 1;
            room
        }
    }

    impl AsyncWrite for Slow {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let n = buf.len().min(self.room());
            self.out.extend_from_slice(&buf[..n]);
            Poll::Ready(Ok(n))
        }
        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            bufs: &[io::IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            let mut room = self.room();
            let mut n = 0;
            for b in bufs {
                let k = b.len().min(room);
                self.out.extend_from_slice(&b[..k]);
                (room, n) = (room - k, n + k);
            }
            Poll::Ready(Ok(n))
        }
        fn is_write_vectored(&self) -> bool {
            self.vectored
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// Writes `slices` through `io` as hyper does: again and again with
    /// what is left until all is out (one buffer, or the slices vectored).
    fn write_all(io: &mut JsonHeadErrors<Slow>, slices: &[&[u8]]) {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let all: Vec<u8> = slices.concat();
        let mut done = 0;
        while done < all.len() {
            let poll = if io.is_write_vectored() {
                // The slices, less what is written.
                let mut skip = done;
                let mut left = Vec::new();
                for s in slices {
                    let cut = skip.min(s.len());
                    skip -= cut;
                    left.push(io::IoSlice::new(&s[cut..]));
                }
                Pin::new(&mut *io).poll_write_vectored(&mut cx, &left)
            } else {
                Pin::new(&mut *io).poll_write(&mut cx, &all[done..])
            };
            match poll {
                Poll::Ready(Ok(n)) if n > 0 => done += n,
                other => panic!("a write returned {other:?}"),
            }
        }
    }

    /// A page whose body holds exactly hyper's error head (the page echoes
    /// a client's list), written to a reader that takes the response up
    /// to the start of that text first: the rest, which begins like hyper's
    /// head (and, at the end of the body, is nothing but it), goes out as it
    /// is, so the client reads the page it asked for, framed as hyper framed
    /// it. And hyper's own head, after a response, is still rewritten.
    #[test]
    fn planted_head_text_in_a_body_is_never_rewritten() {
        for at_end in [false, true] {
            let mut body = b"<!doctype html><ul><li>".to_vec();
            body.extend_from_slice(HYPER_414);
            if !at_end {
                body.extend_from_slice(b"</li></ul>");
            }
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\
                 x-content-type-options: nosniff\r\n\r\n",
                body.len()
            );
            let response = [head.as_bytes(), &body].concat();
            let planted = head.len() + 23;
            for vectored in [false, true] {
                let mut io = JsonHeadErrors::new(Slow::new(&[planted], vectored));
                write_all(&mut io, &[head.as_bytes(), &body]);
                assert_eq!(
                    String::from_utf8_lossy(&io.inner.out),
                    String::from_utf8_lossy(&response),
                    "at_end {at_end}, vectored {vectored}"
                );
                // The next answer is hyper's own: rewritten.
                write_all(&mut io, &[HYPER_414]);
                let rest = String::from_utf8_lossy(&io.inner.out[response.len()..]).into_owned();
                assert!(rest.contains("application/json"), "{rest}");
            }
        }
    }
}
