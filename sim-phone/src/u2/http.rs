//! HTTP/1.1 as the server (NanoHTTPD) speaks it: requests framed by `Content-Length`
//! (no chunked request bodies), keep-alive unless the client says `Connection: close` or
//! speaks HTTP/1.0, fixed-length answers whose status line ends in a space (NanoHTTPD
//! writes `"HTTP/1.1 " + "200 OK" + " \r\n"`).

/// Largest request head we read; larger is answered 400 (NanoHTTPD's buffer is 8 KiB).
pub const MAX_HEAD: usize = 8 * 1024;
/// Largest request body we accept.
pub const MAX_BODY: usize = 4 * 1024 * 1024;

/// One request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Header names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The connection stays open after the answer.
    pub keep_alive: bool,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the bytes read so far hold.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Not a whole request yet.
    Incomplete,
    /// A request that cannot be served: answer 400 and close.
    Bad(&'static str),
    /// A request and how many bytes it used.
    Done(Request, usize),
}

/// Parse one request from the front of `buf`.
pub fn parse(buf: &[u8]) -> Parsed {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return if buf.len() > MAX_HEAD {
            Parsed::Bad("request head too large")
        } else {
            Parsed::Incomplete
        };
    };
    if end > MAX_HEAD {
        return Parsed::Bad("request head too large");
    }
    let Ok(head) = std::str::from_utf8(&buf[..end]) else {
        return Parsed::Bad("request head is not UTF-8");
    };
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let (Some(method), Some(path), Some(version)) = (first.next(), first.next(), first.next())
    else {
        return Parsed::Bad("BAD REQUEST: Syntax error.");
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !path.starts_with('/') {
        return Parsed::Bad("BAD REQUEST: Syntax error.");
    }
    let mut headers = Vec::new();
    for l in lines {
        let Some((k, v)) = l.split_once(':') else {
            return Parsed::Bad("BAD REQUEST: Syntax error.");
        };
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let get = |n: &str| {
        headers
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v): &(String, String)| v.as_str())
    };
    if get("transfer-encoding").is_some() {
        return Parsed::Bad("chunked request bodies are not read");
    }
    let len = match get("content-length") {
        None => 0,
        Some(v) => match v.parse::<usize>() {
            Ok(n) if n <= MAX_BODY => n,
            _ => return Parsed::Bad("bad Content-Length"),
        },
    };
    let body_at = end + 4;
    if buf.len() < body_at + len {
        return Parsed::Incomplete;
    }
    let close = get("connection").is_some_and(|c| c.eq_ignore_ascii_case("close"));
    let keep_alive = version == "HTTP/1.1" && !close;
    let req = Request {
        method: method.to_string(),
        path: path.to_string(),
        body: buf[body_at..body_at + len].to_vec(),
        headers,
        keep_alive,
    };
    Parsed::Done(req, body_at + len)
}

/// A fixed-length answer as NanoHTTPD writes it.
pub fn response(
    status: u16,
    reason: &str,
    content_type: &str,
    date: &str,
    body: &[u8],
    keep_alive: bool,
) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} {reason} \r\nContent-Type: {content_type}\r\nDate: {date}\r\nConnection: {}\r\nContent-Length: {}\r\n\r\n",
        if keep_alive { "keep-alive" } else { "close" },
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_post_with_a_body_then_the_next_request() {
        let two = b"POST /jsonrpc/0 HTTP/1.1\r\nHost: localhost:9008\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}GET /ping HTTP/1.1\r\n\r\n";
        let Parsed::Done(r, n) = parse(two) else {
            panic!("first request");
        };
        assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/jsonrpc/0"));
        assert_eq!(r.body, b"{}");
        assert!(r.keep_alive);
        assert_eq!(r.header("content-type"), Some("application/json"));
        let Parsed::Done(r2, m) = parse(&two[n..]) else {
            panic!("second request");
        };
        assert_eq!(r2.path, "/ping");
        assert_eq!(n + m, two.len());
    }

    #[test]
    fn partial_bad_and_closing_requests() {
        assert_eq!(
            parse(b"POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nab"),
            Parsed::Incomplete
        );
        assert_eq!(parse(b"GET /ping HTTP/1.1\r\n"), Parsed::Incomplete);
        assert!(matches!(parse(b"nonsense\r\n\r\n"), Parsed::Bad(_)));
        assert!(matches!(
            parse(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Parsed::Bad(_)
        ));
        let Parsed::Done(r, _) = parse(b"GET /ping HTTP/1.0\r\n\r\n") else {
            panic!("1.0");
        };
        assert!(!r.keep_alive);
        let Parsed::Done(r, _) = parse(b"GET /ping HTTP/1.1\r\nConnection: close\r\n\r\n") else {
            panic!("close");
        };
        assert!(!r.keep_alive);
    }

    #[test]
    fn status_line_has_nanohttpds_trailing_space() {
        let r = response(
            200,
            "OK",
            "text/plain",
            "Wed, 2 Dec 2026 06:00:00 GMT",
            b"pong",
            true,
        );
        let s = String::from_utf8(r).expect("utf8");
        assert!(s.starts_with("HTTP/1.1 200 OK \r\n"));
        assert!(s.ends_with("Content-Length: 4\r\n\r\npong"));
    }
}
