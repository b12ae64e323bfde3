//! A webhook receiver for the alert tests: an axum server on 127.0.0.1:0 that records
//! every request (path, query, headers, body) and answers like the vendor a path names
//! (`/wecom…` and `/dingtalk…`: `{"errcode":0,…}`, `/feishu…`: `{"code":0,…}`, anything
//! else: an empty 200), or with the statuses a test scripted first. Tests await hits
//! with a deadline ([`Receiver::wait_for`]), never a fixed sleep. And a checker of the
//! Prometheus text exposition format ([`check_exposition`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use serde_json::Value;

/// One request the receiver got.
#[derive(Clone, Debug)]
pub struct Hit {
    pub path: String,
    pub query: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Hit {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn query_pairs(&self) -> HashMap<String, String> {
        url_pairs(&self.query)
    }
    /// The whole request as text (to look for a secret anywhere in it).
    pub fn all_text(&self) -> String {
        format!(
            "{}?{} {:?} {}",
            self.path,
            self.query,
            self.headers,
            String::from_utf8_lossy(&self.body)
        )
    }
}

fn url_pairs(q: &str) -> HashMap<String, String> {
    form_urlencoded::parse(q.as_bytes()).into_owned().collect()
}

#[derive(Clone, Default)]
struct Shared {
    hits: Arc<Mutex<Vec<Hit>>>,
    script: Arc<Mutex<VecDeque<u16>>>,
    arrived: Arc<tokio::sync::Notify>,
}

/// The receiver; lives as long as the runtime it was started on.
#[derive(Clone)]
pub struct Receiver {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    shared: Shared,
}

async fn record(
    State(s): State<Shared>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    let hit = Hit {
        path: uri.path().to_string(),
        query: uri.query().unwrap_or("").to_string(),
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect(),
        body: body.to_vec(),
    };
    let path = hit.path.clone();
    s.hits.lock().unwrap().push(hit);
    s.arrived.notify_waiters();
    let scripted = s.script.lock().unwrap().pop_front();
    if let Some(code) = scripted {
        let status = StatusCode::from_u16(code).unwrap();
        return (status, String::from("scripted")).into_response();
    }
    let body = if path.starts_with("/wecom") || path.starts_with("/dingtalk") {
        r#"{"errcode":0,"errmsg":"ok"}"#
    } else if path.starts_with("/feishu") {
        r#"{"code":0,"msg":"success","data":{}}"#
    } else {
        ""
    };
    (StatusCode::OK, body.to_string()).into_response()
}

impl Receiver {
    /// Starts on the current runtime.
    pub async fn start() -> Receiver {
        let shared = Shared::default();
        let app = axum::Router::new()
            .fallback(record)
            .with_state(shared.clone());
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        tokio::spawn(async move {
            axum::serve(l, app).await.unwrap();
        });
        Receiver { url, shared }
    }

    /// The next answers' statuses, before the vendor-like default.
    pub fn script(&self, statuses: &[u16]) {
        self.shared.script.lock().unwrap().extend(statuses);
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.shared.hits.lock().unwrap().clone()
    }

    /// Waits until `n` requests arrived (at most `deadline`); returns them all.
    pub async fn wait_for(&self, n: usize, deadline: Duration) -> Vec<Hit> {
        let until = tokio::time::Instant::now() + deadline;
        loop {
            let arrived = self.shared.arrived.notified();
            let hits = self.hits();
            if hits.len() >= n {
                return hits;
            }
            if tokio::time::timeout_at(until, arrived).await.is_err() {
                panic!(
                    "{} of {n} webhook requests within {deadline:?}: {hits:?}",
                    hits.len()
                );
            }
        }
    }
}

/// Label pairs of a sample, in order.
pub type Labels = Vec<(String, String)>;
/// One sample: name, labels, value.
pub type Sample = (String, Labels, f64);

/// Checks `text` against the Prometheus text exposition format (0.0.4) and returns the
/// samples as (name, labels, value). Panics with the offending line otherwise: every
/// line a `# HELP`, `# TYPE` or a sample; names and label names well formed; label values
/// quoted with only `\\`, `\"`, `\n` escapes; each family's `# TYPE` once and before its
/// samples, its samples together; histogram buckets cumulative, ending with `+Inf` equal
/// to `_count`.
pub fn check_exposition(text: &str) -> Vec<Sample> {
    let name_ok = |n: &str| {
        let mut c = n.chars();
        c.next()
            .is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == ':')
            && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == ':')
    };
    let label_ok = |n: &str| {
        let mut c = n.chars();
        c.next()
            .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
            && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
    };
    assert!(text.ends_with('\n'), "the text ends with a newline");
    let mut types: HashMap<String, String> = HashMap::new();
    let mut finished: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    let mut samples = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            let what = parts.next().unwrap();
            let name = parts
                .next()
                .unwrap_or_else(|| panic!("bad comment: {line}"));
            assert!(name_ok(name), "bad name: {line}");
            match what {
                "HELP" => {}
                "TYPE" => {
                    let t = parts.next().unwrap_or("");
                    assert!(
                        ["counter", "gauge", "histogram", "summary", "untyped"].contains(&t),
                        "bad type: {line}"
                    );
                    assert!(
                        types.insert(name.to_string(), t.to_string()).is_none(),
                        "TYPE twice: {line}"
                    );
                    if let Some(c) = current.replace(name.to_string()) {
                        finished.push(c);
                    }
                }
                _ => panic!("unknown comment: {line}"),
            }
            continue;
        }
        assert!(!line.is_empty(), "empty line");
        // name{labels} value
        let (head, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("no value: {line}"));
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            "NaN" => f64::NAN,
            v => v.parse().unwrap_or_else(|_| panic!("bad value: {line}")),
        };
        let (name, labels) = match head.find('{') {
            None => (head.to_string(), Vec::new()),
            Some(i) => {
                assert!(head.ends_with('}'), "bad labels: {line}");
                let inner = &head[i + 1..head.len() - 1];
                let mut labels = Vec::new();
                let mut rest = inner;
                while !rest.is_empty() {
                    let (k, after) = rest
                        .split_once("=\"")
                        .unwrap_or_else(|| panic!("bad label: {line}"));
                    assert!(label_ok(k), "bad label name: {line}");
                    let mut v = String::new();
                    let mut chars = after.char_indices();
                    let end = loop {
                        let (j, c) = chars
                            .next()
                            .unwrap_or_else(|| panic!("unterminated: {line}"));
                        match c {
                            '\\' => match chars.next().map(|x| x.1) {
                                Some('\\') => v.push('\\'),
                                Some('"') => v.push('"'),
                                Some('n') => v.push('\n'),
                                other => panic!("bad escape {other:?}: {line}"),
                            },
                            '"' => break j,
                            c => v.push(c),
                        }
                    };
                    labels.push((k.to_string(), v));
                    rest = &after[end + 1..];
                    rest = rest.strip_prefix(',').unwrap_or(rest);
                }
                (head[..i].to_string(), labels)
            }
        };
        assert!(name_ok(&name), "bad name: {line}");
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s)
                    .filter(|f| types.get(*f).is_some_and(|t| t == "histogram"))
            })
            .unwrap_or(&name)
            .to_string();
        assert!(
            types.contains_key(&family),
            "sample before its TYPE: {line}"
        );
        assert_eq!(
            current.as_deref(),
            Some(family.as_str()),
            "family not contiguous: {line}"
        );
        assert!(!finished.contains(&family), "family split: {line}");
        samples.push((name, labels, value));
    }
    // Histograms: cumulative buckets ending with +Inf = _count, per label set.
    for (family, t) in &types {
        if t != "histogram" {
            continue;
        }
        let key = |l: &[(String, String)]| {
            l.iter()
                .filter(|(k, _)| k != "le")
                .cloned()
                .collect::<Vec<_>>()
        };
        let mut series: HashMap<Labels, Vec<(String, f64)>> = HashMap::new();
        for (n, l, v) in &samples {
            if *n == format!("{family}_bucket") {
                let le = l.iter().find(|(k, _)| k == "le").expect("le").1.clone();
                series.entry(key(l)).or_default().push((le, *v));
            }
        }
        for (labels, buckets) in series {
            assert!(
                buckets.windows(2).all(|w| w[0].1 <= w[1].1),
                "{family}{labels:?} not cumulative"
            );
            let (le, inf) = buckets.last().unwrap();
            assert_eq!(le, "+Inf", "{family}{labels:?}");
            let count = samples
                .iter()
                .find(|(n, l, _)| *n == format!("{family}_count") && *l == labels)
                .expect("_count")
                .2;
            assert_eq!(*inf, count, "{family}{labels:?}");
        }
    }
    samples
}

/// The value of sample `name` with exactly `labels`, if present.
pub fn sample(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|(n, l, _)| {
            n == name
                && l.len() == labels.len()
                && labels
                    .iter()
                    .all(|(k, v)| l.iter().any(|(a, b)| a == k && b == v))
        })
        .map(|s| s.2)
}
