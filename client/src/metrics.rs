//! Process metrics and the Prometheus text exposition format.
//!
//! - The device round-trip latency: [`observe_device_call`] is the device layer's
//!   timing hook (one call per ADB round trip, by operation), kept in a process-wide
//!   histogram — a few atomics' worth of work under a mutex, next to a call that takes
//!   milliseconds to seconds.
//! - [`Exposition`]: writes metric families in the text format (version 0.0.4): one
//!   `# HELP` and `# TYPE` per family before its samples, label values escaped.
//!
//! What is counted in the store (runs, outbox, alerts, webhooks) is read at scrape time
//! by the console (`crate::console`), not kept here.

use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds (seconds) of the device latency buckets: a tap is tens of ms, a dump on
/// a real phone 0.8–3 s, a deadline up to tens of seconds.
pub const DEVICE_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// One operation's latency histogram.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Histogram {
    /// Non-cumulative counts per bucket of [`DEVICE_BUCKETS`]; above the last is only in
    /// `count`.
    pub buckets: [u64; DEVICE_BUCKETS.len()],
    pub count: u64,
    pub sum_secs: f64,
    /// Calls that ended in an error (deadline, offline, …), counted in the histogram too.
    pub errors: u64,
}

impl Histogram {
    fn observe(&mut self, secs: f64, ok: bool) {
        if let Some(i) = DEVICE_BUCKETS.iter().position(|&b| secs <= b) {
            self.buckets[i] += 1;
        }
        self.count += 1;
        self.sum_secs += secs;
        if !ok {
            self.errors += 1;
        }
    }
}

static DEVICE_CALLS: Mutex<Vec<(&'static str, Histogram)>> = Mutex::new(Vec::new());

/// The device layer's timing hook: one device round trip of `op` took `elapsed`.
pub fn observe_device_call(op: &'static str, elapsed: Duration, ok: bool) {
    let mut all = DEVICE_CALLS.lock().unwrap_or_else(|p| p.into_inner());
    let secs = elapsed.as_secs_f64();
    match all.iter_mut().find(|(o, _)| *o == op) {
        Some((_, h)) => h.observe(secs, ok),
        None => {
            let mut h = Histogram::default();
            h.observe(secs, ok);
            all.push((op, h));
        }
    }
}

/// The device latency histograms so far, by operation name.
pub fn device_calls() -> Vec<(&'static str, Histogram)> {
    let mut v = DEVICE_CALLS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    v.sort_by(|a, b| a.0.cmp(b.0));
    v
}

/// A text exposition being written.
#[derive(Default)]
pub struct Exposition {
    out: String,
}

/// The content type of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

impl Exposition {
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a family: `# HELP` and `# TYPE` lines.
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    /// One sample line.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", escape_label(v));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {}", number(value));
    }

    /// A histogram's samples (`_bucket` cumulative with `+Inf`, `_sum`, `_count`) for one
    /// label set; the family must have been started with type `histogram`.
    pub fn histogram(&mut self, name: &str, labels: &[(&str, &str)], h: &Histogram) {
        let mut cumulative = 0;
        let bucket = format!("{name}_bucket");
        for (b, n) in DEVICE_BUCKETS.iter().zip(h.buckets) {
            cumulative += n;
            let le = number(*b);
            let mut l = labels.to_vec();
            l.push(("le", &le));
            self.sample(&bucket, &l, cumulative as f64);
        }
        let mut l = labels.to_vec();
        l.push(("le", "+Inf"));
        self.sample(&bucket, &l, h.count as f64);
        self.sample(&format!("{name}_sum"), labels, h.sum_secs);
        self.sample(&format!("{name}_count"), labels, h.count as f64);
    }

    pub fn finish(self) -> String {
        self.out
    }
}

fn escape_label(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_is_cumulative_and_ends_with_inf() {
        let mut h = Histogram::default();
        h.observe(0.003, true);
        h.observe(0.3, true);
        h.observe(99.0, false);
        let mut e = Exposition::new();
        e.family("x_seconds", "histogram", "x");
        e.histogram("x_seconds", &[("op", "dump")], &h);
        let text = e.finish();
        assert!(
            text.contains("x_seconds_bucket{op=\"dump\",le=\"0.005\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("x_seconds_bucket{op=\"dump\",le=\"0.5\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("x_seconds_bucket{op=\"dump\",le=\"30\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("x_seconds_bucket{op=\"dump\",le=\"+Inf\"} 3\n"),
            "{text}"
        );
        assert!(text.contains("x_seconds_count{op=\"dump\"} 3\n"), "{text}");
        assert_eq!(h.errors, 1);
    }

    #[test]
    fn label_values_are_escaped() {
        let mut e = Exposition::new();
        e.family("y", "gauge", "line one\nline two");
        e.sample("y", &[("reason", "a \"b\" \\ c\nd")], 1.0);
        assert_eq!(
            e.finish(),
            "# HELP y line one\\nline two\n# TYPE y gauge\ny{reason=\"a \\\"b\\\" \\\\ c\\nd\"} 1\n"
        );
    }
}
