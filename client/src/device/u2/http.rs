//! The HTTP/1.1 we speak to uiautomator2's server (NanoHTTPD): one request per
//! connection (`Connection: close`, no gzip asked), the answer framed by
//! `Content-Length` or, should a server send one, `Transfer-Encoding: chunked`. Pure:
//! bytes in, a typed answer out ([`Answer`], [`parse`]); the socket is `transport`'s.

use super::error::U2Error;

/// Largest answer we accept (a dump of a busy screen is a few hundred KiB; a base64
/// screenshot a few MiB).
pub const MAX_ANSWER: usize = 16 * 1024 * 1024;
/// Largest answer head.
const MAX_HEAD: usize = 16 * 1024;

/// A request: `method` `path`, with a JSON body when given.
pub fn request(method: &str, path: &str, json_body: Option<&[u8]>) -> Vec<u8> {
    let mut out = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: uiautomator2\r\n\
         Accept-Encoding: \r\nConnection: close\r\n"
    )
    .into_bytes();
    if let Some(body) = json_body {
        out.extend_from_slice(
            format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        );
        out.extend_from_slice(body);
    } else {
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// A whole answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

/// What the bytes read so far hold.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Not a whole answer yet (read on).
    Incomplete,
    /// A whole answer.
    Done(Answer),
}

/// Parses the answer at the front of `buf`. `eof`: the server closed the stream after
/// these bytes, so an unfinished answer is [`U2Error::Truncated`] (an answer without a
/// length then ends at the close, as HTTP/1.1 allows).
pub fn parse(buf: &[u8], eof: bool) -> Result<Parsed, U2Error> {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        if buf.len() > MAX_HEAD {
            return Err(U2Error::BadAnswer("answer head too large".into()));
        }
        if eof {
            return Err(if buf.is_empty() {
                U2Error::ServerGone("the stream closed before any answer".into())
            } else {
                U2Error::Truncated(format!("the answer head was cut after {} bytes", buf.len()))
            });
        }
        return Ok(Parsed::Incomplete);
    };
    let head = std::str::from_utf8(&buf[..end])
        .map_err(|_| U2Error::BadAnswer("answer head is not UTF-8".into()))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut words = status_line.split(' ');
    let version = words.next().unwrap_or("");
    if !version.starts_with("HTTP/1.") {
        return Err(U2Error::BadAnswer(format!(
            "not an HTTP/1.x status line: {}",
            snippet(status_line)
        )));
    }
    let status = words
        .next()
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|s| (100..600).contains(s))
        .ok_or_else(|| U2Error::BadAnswer(format!("bad status line: {}", snippet(status_line))))?;
    let mut length: Option<usize> = None;
    let mut chunked = false;
    for line in lines {
        let Some((k, v)) = line.split_once(':') else {
            return Err(U2Error::BadAnswer(format!(
                "bad header line: {}",
                snippet(line)
            )));
        };
        let (k, v) = (k.trim(), v.trim());
        if k.eq_ignore_ascii_case("content-length") {
            let n = v
                .parse::<usize>()
                .map_err(|_| U2Error::BadAnswer(format!("bad Content-Length: {}", snippet(v))))?;
            if length.is_some_and(|l| l != n) {
                return Err(U2Error::BadAnswer(
                    "two different Content-Length headers".into(),
                ));
            }
            length = Some(n);
        } else if k.eq_ignore_ascii_case("transfer-encoding") {
            if v.eq_ignore_ascii_case("chunked") {
                chunked = true;
            } else {
                return Err(U2Error::BadAnswer(format!(
                    "unsupported Transfer-Encoding: {}",
                    snippet(v)
                )));
            }
        } else if k.eq_ignore_ascii_case("content-encoding") && !v.eq_ignore_ascii_case("identity")
        {
            // We never ask for gzip (NanoHTTPD's gzip leaks): an encoded body is not ours.
            return Err(U2Error::BadAnswer(format!(
                "unexpected Content-Encoding: {}",
                snippet(v)
            )));
        }
    }
    let rest = &buf[end + 4..];
    let body = if chunked {
        match dechunk(rest)? {
            Some(b) => b,
            None if eof => {
                return Err(U2Error::Truncated(
                    "the chunked answer was cut before its last chunk".into(),
                ))
            }
            None => return Ok(Parsed::Incomplete),
        }
    } else if let Some(n) = length {
        if n > MAX_ANSWER {
            return Err(U2Error::BadAnswer(format!(
                "answer of {n} bytes is too large"
            )));
        }
        if rest.len() < n {
            if eof {
                return Err(U2Error::Truncated(format!(
                    "the answer was cut after {} of {n} body bytes",
                    rest.len()
                )));
            }
            return Ok(Parsed::Incomplete);
        }
        rest[..n].to_vec()
    } else if eof {
        rest.to_vec()
    } else {
        if rest.len() > MAX_ANSWER {
            return Err(U2Error::BadAnswer("answer too large".into()));
        }
        return Ok(Parsed::Incomplete);
    };
    Ok(Parsed::Done(Answer { status, body }))
}

/// A chunked body: `Ok(None)` while incomplete.
fn dechunk(mut rest: &[u8]) -> Result<Option<Vec<u8>>, U2Error> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
            return Ok(None);
        };
        let size_text = std::str::from_utf8(&rest[..eol])
            .map_err(|_| U2Error::BadAnswer("bad chunk size".into()))?;
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| U2Error::BadAnswer(format!("bad chunk size: {}", snippet(size_text))))?;
        rest = &rest[eol + 2..];
        if size == 0 {
            // Trailers are not used by NanoHTTPD; the final CRLF ends the body.
            return Ok(rest.windows(2).any(|w| w == b"\r\n").then_some(out));
        }
        if out.len() + size > MAX_ANSWER {
            return Err(U2Error::BadAnswer("answer too large".into()));
        }
        if rest.len() < size + 2 {
            return Ok(None);
        }
        if &rest[size..size + 2] != b"\r\n" {
            return Err(U2Error::BadAnswer("chunk not followed by CRLF".into()));
        }
        out.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// At most 120 characters of a text, for error messages (never a dump: callers pass
/// heads and status lines only).
pub fn snippet(s: &str) -> String {
    let t: String = s.chars().take(120).collect();
    if t.len() < s.len() {
        format!("{t}…")
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(buf: &[u8], eof: bool) -> Answer {
        match parse(buf, eof).expect("parses") {
            Parsed::Done(a) => a,
            Parsed::Incomplete => panic!("incomplete"),
        }
    }

    #[test]
    fn requests_ask_for_no_gzip_and_close() {
        let r = String::from_utf8(request("POST", "/jsonrpc/0", Some(b"{}"))).unwrap();
        assert!(r.starts_with("POST /jsonrpc/0 HTTP/1.1\r\n"), "{r}");
        assert!(r.contains("\r\nAccept-Encoding: \r\n"), "{r}");
        assert!(r.contains("\r\nConnection: close\r\n"), "{r}");
        assert!(r.ends_with("Content-Length: 2\r\n\r\n{}"), "{r}");
        let g = String::from_utf8(request("GET", "/ping", None)).unwrap();
        assert!(
            g.ends_with("\r\n\r\n") && !g.contains("Content-Length"),
            "{g}"
        );
    }

    #[test]
    fn a_nanohttpd_answer_with_its_trailing_space_parses() {
        let a = b"HTTP/1.1 200 OK \r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\npong";
        assert_eq!(
            done(a, false),
            Answer {
                status: 200,
                body: b"pong".to_vec()
            }
        );
    }

    #[test]
    fn partial_answers_wait_and_cut_answers_are_truncated() {
        let a = b"HTTP/1.1 200 OK \r\nContent-Length: 10\r\n\r\n12345";
        assert_eq!(parse(a, false).unwrap(), Parsed::Incomplete);
        let e = parse(a, true).unwrap_err();
        assert_eq!(e.code(), "U2_ANSWER_TRUNCATED", "{e}");
        let head = b"HTTP/1.1 200 OK \r\nContent-Len";
        assert_eq!(parse(head, false).unwrap(), Parsed::Incomplete);
        assert_eq!(parse(head, true).unwrap_err().code(), "U2_ANSWER_TRUNCATED");
        assert_eq!(parse(b"", true).unwrap_err().code(), "U2_SERVER_GONE");
    }

    #[test]
    fn chunked_answers_are_joined() {
        let a = b"HTTP/1.1 200 OK \r\nTransfer-Encoding: chunked\r\n\r\n3\r\npon\r\n1;x=y\r\ng\r\n0\r\n\r\n";
        assert_eq!(done(a, false).body, b"pong");
        let cut = b"HTTP/1.1 200 OK \r\nTransfer-Encoding: chunked\r\n\r\n3\r\npon\r\n";
        assert_eq!(parse(cut, false).unwrap(), Parsed::Incomplete);
        assert_eq!(parse(cut, true).unwrap_err().code(), "U2_ANSWER_TRUNCATED");
        let bad = b"HTTP/1.1 200 OK \r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
        assert_eq!(parse(bad, false).unwrap_err().code(), "U2_BAD_ANSWER");
    }

    #[test]
    fn malformed_heads_are_bad_answers() {
        for a in [
            &b"SSH-2.0-OpenSSH\r\n\r\n"[..],
            b"HTTP/1.1 abc OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 1\r\n\r\nx",
            b"HTTP/1.1 200 OK\r\nContent-Length: 999999999999\r\n\r\n",
        ] {
            let e = parse(a, false).unwrap_err();
            assert_eq!(e.code(), "U2_BAD_ANSWER", "{e}");
        }
    }

    #[test]
    fn statuses_other_than_200_are_returned_as_read() {
        let a = b"HTTP/1.1 404 Not Found \r\nContent-Length: 9\r\n\r\nNot Found";
        assert_eq!(done(a, false).status, 404);
        // No length: the body ends at the close.
        let a = b"HTTP/1.1 500 Internal Error \r\n\r\noops";
        assert_eq!(parse(a, false).unwrap(), Parsed::Incomplete);
        assert_eq!(done(a, true).body, b"oops");
    }
}
