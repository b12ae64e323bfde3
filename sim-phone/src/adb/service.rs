//! The services a stream can open (`shell`, `exec`, `sync`, `framebuffer`) and running one.

use std::sync::Arc;

use crate::device::LatencyProfile;

use super::shared::{execute, Shared};
use super::shell::shell;
use super::stream::StreamIo;
use super::sync::sync;
use super::u2;

/// The services we offer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Service {
    Shell {
        v2: bool,
        cmd: String,
    },
    Exec(String),
    Sync,
    /// `framebuffer:` — raw RGBA with a version-2 header (what `adb_client`'s
    /// `framebuffer()` and old `adb screencap` paths read).
    Framebuffer,
    /// `tcp:PORT` (or `tcp:localhost:PORT`): a byte stream to a port on the phone. Only
    /// uiautomator2's server listens on one; the stream is refused (CLSE) otherwise.
    Tcp(u16),
}

impl Service {
    pub(crate) fn parse(s: &str) -> Option<Service> {
        if let Some(cmd) = s.strip_prefix("exec:") {
            return Some(Service::Exec(cmd.to_string()));
        }
        if s == "sync:" {
            return Some(Service::Sync);
        }
        if s == "framebuffer:" {
            return Some(Service::Framebuffer);
        }
        if let Some(rest) = s.strip_prefix("tcp:") {
            let port = match rest.rsplit_once(':') {
                Some(("localhost" | "127.0.0.1", p)) => p,
                Some(_) => return None,
                None => rest,
            };
            return port
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .map(Service::Tcp);
        }
        // shell[,arg...]:command — args like v2, raw, pty, TERM=xterm.
        let rest = s.strip_prefix("shell")?;
        let (args, cmd) = rest.split_once(':')?;
        if !args.is_empty() && !args.starts_with(',') {
            return None;
        }
        let v2 = args.split(',').any(|a| a == "v2");
        Some(Service::Shell {
            v2,
            cmd: cmd.to_string(),
        })
    }
}

pub(crate) async fn run_service(kind: Service, mut io: StreamIo, shared: Arc<Shared>) {
    match kind {
        Service::Shell { v2, cmd } => shell(&mut io, &shared, v2, &cmd).await,
        Service::Exec(cmd) => {
            let out = execute(&shared, &cmd).await;
            match out.resident {
                Some(id) => u2::resident(&mut io, &shared, id, None, out).await,
                None => {
                    let mut bytes = out.stdout;
                    bytes.extend_from_slice(&out.stderr);
                    io.write(&bytes).await;
                }
            }
        }
        Service::Tcp(port) => u2::tcp(&mut io, &shared, port).await,
        Service::Sync => {
            shared.lock().counters.sync_sessions += 1;
            sync(&mut io, &shared).await;
        }
        Service::Framebuffer => {
            let (w, h, rgba, delay) = shared.lock().framebuffer();
            if shared.profile == LatencyProfile::Realistic {
                tokio::time::sleep(delay).await;
            }
            // fb_info v2: version, bpp, colorSpace, size, width, height, then offset/length
            // of red, blue, green, alpha (AOSP framebuffer_service.cpp).
            let mut v = Vec::with_capacity(56 + rgba.len());
            for x in [
                2u32,
                32,
                0,
                rgba.len() as u32,
                w,
                h,
                0,
                8,
                16,
                8,
                8,
                8,
                24,
                8,
            ] {
                v.extend_from_slice(&x.to_le_bytes());
            }
            v.extend_from_slice(&rgba);
            io.write(&v).await;
        }
    }
    io.close();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_names() {
        assert_eq!(
            Service::parse("shell,v2,TERM=xterm,raw:uiautomator dump /dev/tty"),
            Some(Service::Shell {
                v2: true,
                cmd: "uiautomator dump /dev/tty".into()
            })
        );
        assert_eq!(
            Service::parse("shell:echo a:b"),
            Some(Service::Shell {
                v2: false,
                cmd: "echo a:b".into()
            })
        );
        assert_eq!(
            Service::parse("exec:screencap '-p'"),
            Some(Service::Exec("screencap '-p'".into()))
        );
        assert_eq!(Service::parse("sync:"), Some(Service::Sync));
        assert_eq!(Service::parse("tcp:9008"), Some(Service::Tcp(9008)));
        assert_eq!(
            Service::parse("tcp:localhost:9008"),
            Some(Service::Tcp(9008))
        );
        assert_eq!(Service::parse("tcp:example.com:80"), None);
        assert_eq!(Service::parse("tcp:0"), None);
        assert_eq!(Service::parse("shellx:ls"), None);
        assert_eq!(Service::parse("reboot:"), None);
    }
}
