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
//! they are: a response head written by hyper with no
//! `x-content-type-options` (every response that passes through the router
//! has it) and `content-length: 0`, at the start of a write. HTTP/2 frames
//! never start with `HTTP/`, so an h2 connection passes through untouched.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

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
}

impl<I> JsonHeadErrors<I> {
    pub(crate) fn new(inner: I) -> JsonHeadErrors<I> {
        JsonHeadErrors {
            inner,
            pending: None,
        }
    }
}

/// The JSON answer for a head hyper wrote itself, or `None` if `buf` does
/// not start with one.
fn rewrite(buf: &[u8]) -> Option<Vec<u8>> {
    let rest = buf.strip_prefix(b"HTTP/1.")?;
    // Every write of every response passes here: anything but a 4xx head
    // (`HTTP/1.1 4..`) is let through before the head is read.
    if rest.get(1..3) != Some(b" 4") {
        return None;
    }
    let end = rest.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&rest[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let status: u16 = status_line.get(2..5)?.parse().ok()?;
    let mut empty = false;
    let mut date = None;
    for line in lines {
        let (name, value) = line.split_once(':')?;
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("content-length") {
            empty = value == "0";
        } else if name.eq_ignore_ascii_case("x-content-type-options") {
            return None;
        } else if name.eq_ignore_ascii_case("date") {
            date = Some(value);
        }
    }
    if !empty || !(400..500).contains(&status) {
        return None;
    }
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
        "HTTP/1.1 {status_line_rest}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nx-content-type-options: nosniff\r\n\
         referrer-policy: no-referrer\r\nconnection: close\r\n",
        body.len(),
        status_line_rest = &status_line[2..],
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
            match rewrite(buf) {
                // hyper writes its answer's head alone, so all of `buf` is it.
                Some(answer) => this.pending = Some((answer, 0, buf.len())),
                None => return Pin::new(&mut this.inner).poll_write(cx, buf),
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
            let first = bufs.iter().find(|b| !b.is_empty());
            match first.and_then(|b| rewrite(b).map(|answer| (answer, b.len()))) {
                Some((answer, len)) => this.pending = Some((answer, 0, len)),
                None => return Pin::new(&mut this.inner).poll_write_vectored(cx, bufs),
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

    #[test]
    fn hypers_own_answers_get_the_error_shape() {
        let hyper = b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\n\
                      date: Tue, 01 Dec 2026 07:00:00 GMT\r\n\r\n";
        let out = String::from_utf8(rewrite(hyper).unwrap()).unwrap();
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
        // Header names in any case; HTTP/1.0 too.
        assert!(rewrite(b"HTTP/1.0 400 Bad Request\r\nContent-Length: 0\r\n\r\n").is_some());
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
            b"{\"ids\":[\"1\"]}",
            b"\x00\x00\x12\x04\x00\x00\x00\x00\x00",
        ] {
            assert!(
                rewrite(passes).is_none(),
                "{}",
                String::from_utf8_lossy(passes)
            );
        }
    }
}
