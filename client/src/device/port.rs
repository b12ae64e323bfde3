//! The device port: the [`Device`] trait (dump, tap, swipe, key, open a URL,
//! screenshot, shell with exit code), its value types and [`DeviceError`] with stable
//! codes and `is_retryable()`.

use std::time::Duration;

use serde::Serialize;
use thiserror::Error;

use crate::screen::{DumpError, NodeRef, Point, Target, Tree};

/// An Android key code (`input keyevent N`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct KeyCode(pub u16);

impl KeyCode {
    pub const HOME: KeyCode = KeyCode(3);
    pub const BACK: KeyCode = KeyCode(4);
    pub const ENTER: KeyCode = KeyCode(66);
    pub const APP_SWITCH: KeyCode = KeyCode(187);
    pub const WAKEUP: KeyCode = KeyCode(224);
    /// `KEYCODE_UNKNOWN`: no app acts on it; the probe that injected input is allowed.
    pub const UNKNOWN: KeyCode = KeyCode(0);
}

/// A fresh UI dump: the raw text (for the artifact directory) and its parsed tree.
#[derive(Clone, Debug)]
pub struct UiDump {
    /// What uiautomator printed, hierarchy included (it holds personal data: keep it in
    /// artifacts, never in logs).
    pub xml: String,
    pub tree: Tree,
}

/// A screenshot whose PNG signature, IHDR and IEND have been checked.
#[derive(Clone, PartialEq, Eq)]
pub struct Png {
    pub bytes: Vec<u8>,
    pub width: u32,
    pub height: u32,
}

impl std::fmt::Debug for Png {
    // The bytes are a picture of the user's screen: print their size only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Png({}x{}, {} bytes)",
            self.width,
            self.height,
            self.bytes.len()
        )
    }
}

/// What a shell command printed and how it exited.
///
/// Over a transport without separate stderr (direct TCP, shell v1) the device merges
/// stderr into `stdout`; `stderr` then holds only what arrived after the exit status.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShellOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: i32,
}

impl ShellOutput {
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    pub fn success(&self) -> bool {
        self.exit_code == 0
    }
}

/// The operation a deadline or error belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Connect,
    Dump,
    Tap,
    Swipe,
    Key,
    OpenUrl,
    Screenshot,
    Shell,
    State,
}

impl Op {
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Connect => "connect",
            Op::Dump => "dump",
            Op::Tap => "tap",
            Op::Swipe => "swipe",
            Op::Key => "key",
            Op::OpenUrl => "open_url",
            Op::Screenshot => "screenshot",
            Op::Shell => "shell",
            Op::State => "state",
        }
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a device call failed. Every variant has a stable [`code`](DeviceError::code), a
/// `decisions.md` §5 [`failure_code`](DeviceError::failure_code) and says whether a
/// retry can help.
#[derive(Debug, Error)]
pub enum DeviceError {
    /// The adb server does not list the serial (unplugged, or `adb connect` failed).
    #[error("device {serial} not found: {detail}")]
    NotFound { serial: String, detail: String },
    /// Listed but not usable now (`offline`, `connecting`, `authorizing`, …), or the
    /// connection to it was refused or dropped.
    #[error("device {serial} is {state}")]
    Offline { serial: String, state: String },
    /// The phone has not accepted this computer's key: a human must confirm the USB
    /// debugging dialog on the phone.
    #[error("device {serial} is unauthorized: accept the USB debugging prompt on the phone")]
    Unauthorized { serial: String },
    /// The adb server cannot be reached (not started, wrong `--adb-server`).
    #[error("adb server at {addr} unreachable: {detail} (start it with `adb start-server`)")]
    AdbServerUnavailable { addr: String, detail: String },
    /// The call did not finish within its deadline; its connection was discarded.
    #[error("{op} did not finish within {deadline:?}")]
    DeadlineExceeded { op: Op, deadline: Duration },
    /// uiautomator produced no usable hierarchy (idle state, null root, empty, …).
    #[error("UI dump failed: {0}")]
    Dump(#[from] DumpError),
    /// The dump file was missing after uiautomator said it wrote it (file mode: the
    /// file is deleted before each dump, so this is what a stale dump looks like).
    #[error("uiautomator reported a dump but {path} was not (re)written")]
    DumpFileMissing { path: String },
    /// A command exited non-zero, or printed an error on success (`am start`).
    #[error("`{program}` failed with exit status {exit_code}: {stderr}")]
    CommandFailed {
        program: String,
        exit_code: i32,
        /// At most 200 characters of stderr (or stdout when stderr is empty).
        stderr: String,
    },
    /// The phone refused injected input (`INJECT_EVENTS`): MIUI / HyperOS until
    /// 开发者选项 › "USB调试（安全设置）" is on. Nothing was tapped or typed.
    #[error("the phone refuses injected input (`{program}`: INJECT_EVENTS): turn on 开发者选项 › \"USB调试（安全设置）\" (MIUI / HyperOS; it may ask for a Mi account sign-in), then the worker resumes by itself")]
    InputDenied { program: String },
    /// `screencap -p` output is not a complete PNG.
    #[error("screenshot is not a valid PNG: {0}")]
    BadPng(String),
    /// The node to tap has no visible part on screen.
    #[error("the element to tap is not on screen")]
    NotOnScreen,
    /// An argument no shell can carry (a NUL byte), or an unusable device address.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The transport answered something unexpected (e.g. the exit-status marker is
    /// missing because the stream was cut).
    #[error("ADB protocol error: {0}")]
    Protocol(String),
    /// Socket-level failure.
    #[error("ADB I/O error: {0}")]
    Io(String),
    /// The key for direct TCP connections cannot be read or created.
    #[error("ADB key {path}: {detail}")]
    Key { path: String, detail: String },
    /// The device guard refused a tap (a pay button, or a submit that is not allowed).
    #[error("tap refused: {0}")]
    TapRefused(String),
    /// The device guard refused a tap because a window of another package (notification
    /// shade, heads-up, keyboard, system dialog, chooser) would receive it; nothing was
    /// tapped.
    #[error("tap refused: the point is covered by {} `{window}`", .kind.as_str())]
    TapCovered {
        kind: crate::screen::windows::CoverKind,
        window: String,
    },
    /// The `u2` backend (uiautomator2's server) failed the call: see
    /// [`super::u2::error::U2Error`] for its own stable codes. An input call whose answer was
    /// lost may have landed: it is never repeated.
    #[error(transparent)]
    U2(#[from] super::u2::error::U2Error),
}

impl DeviceError {
    /// A stable SCREAMING_SNAKE code for logs and failure details.
    pub fn code(&self) -> &'static str {
        match self {
            DeviceError::NotFound { .. } => "DEVICE_NOT_FOUND",
            DeviceError::Offline { .. } => "DEVICE_OFFLINE",
            DeviceError::Unauthorized { .. } => "DEVICE_UNAUTHORIZED",
            DeviceError::AdbServerUnavailable { .. } => "ADB_SERVER_UNAVAILABLE",
            DeviceError::DeadlineExceeded { .. } => "DEVICE_DEADLINE_EXCEEDED",
            DeviceError::Dump(e) => e.code(),
            DeviceError::DumpFileMissing { .. } => "UI_DUMP_STALE_FILE",
            DeviceError::CommandFailed { .. } => "DEVICE_COMMAND_FAILED",
            DeviceError::InputDenied { .. } => "INPUT_INJECTION_DENIED",
            DeviceError::BadPng(_) => "SCREENSHOT_INVALID",
            DeviceError::NotOnScreen => "TAP_TARGET_OFF_SCREEN",
            DeviceError::InvalidArgument(_) => "DEVICE_INVALID_ARGUMENT",
            DeviceError::Protocol(_) => "DEVICE_PROTOCOL_ERROR",
            DeviceError::Io(_) => "DEVICE_IO_ERROR",
            DeviceError::Key { .. } => "ADB_KEY_ERROR",
            DeviceError::TapRefused(_) => "TAP_REFUSED",
            DeviceError::TapCovered { .. } => "TAP_COVERED",
            DeviceError::U2(e) => e.code(),
        }
    }

    /// Whether trying again later (after a reconnect, a short wait) can help. Not
    /// retryable: things only a human or a code change can fix.
    pub fn is_retryable(&self) -> bool {
        match self {
            DeviceError::NotFound { .. }
            | DeviceError::Offline { .. }
            | DeviceError::AdbServerUnavailable { .. }
            | DeviceError::DeadlineExceeded { .. }
            | DeviceError::DumpFileMissing { .. }
            | DeviceError::BadPng(_)
            | DeviceError::Protocol(_)
            | DeviceError::Io(_)
            | DeviceError::TapCovered { .. }
            | DeviceError::InputDenied { .. } => true,
            DeviceError::Dump(e) => e.is_retryable(),
            DeviceError::U2(e) => e.is_retryable(),
            DeviceError::Unauthorized { .. }
            | DeviceError::CommandFailed { .. }
            | DeviceError::NotOnScreen
            | DeviceError::InvalidArgument(_)
            | DeviceError::Key { .. }
            | DeviceError::TapRefused(_) => false,
        }
    }

    /// The task-level failure code of `decisions.md` §5 (`error.code` of a §7 failure).
    pub fn failure_code(&self) -> &'static str {
        match self {
            DeviceError::Dump(_) | DeviceError::DumpFileMissing { .. } => "UI_DUMP_FAILED",
            DeviceError::Unauthorized { .. } => "DEVICE_UNAUTHORIZED",
            DeviceError::CommandFailed { .. } => "DEVICE_COMMAND_FAILED",
            DeviceError::InputDenied { .. } => "INPUT_INJECTION_DENIED",
            DeviceError::BadPng(_) => "SCREENSHOT_FAILED",
            DeviceError::NotOnScreen | DeviceError::TapRefused(_) => "PAGE_NOT_RECOGNIZED",
            DeviceError::TapCovered { .. } => "SCREEN_OBSTRUCTED",
            DeviceError::InvalidArgument(_)
            | DeviceError::Key { .. }
            | DeviceError::U2(super::u2::error::U2Error::JarNotFound(_)) => "DEVICE_CONFIG_INVALID",
            DeviceError::U2(_) => "DEVICE_OFFLINE",
            DeviceError::NotFound { .. }
            | DeviceError::Offline { .. }
            | DeviceError::AdbServerUnavailable { .. }
            | DeviceError::DeadlineExceeded { .. }
            | DeviceError::Protocol(_)
            | DeviceError::Io(_) => "DEVICE_OFFLINE",
        }
    }

    /// Errors after which the connection is not trusted any more (the next call
    /// reconnects).
    pub(crate) fn poisons_connection(&self) -> bool {
        matches!(
            self,
            DeviceError::DeadlineExceeded { .. }
                | DeviceError::Protocol(_)
                | DeviceError::Io(_)
                | DeviceError::Offline { .. }
                | DeviceError::NotFound { .. }
                | DeviceError::Unauthorized { .. }
                | DeviceError::AdbServerUnavailable { .. }
        )
    }
}

/// The phone: what the flows need, nothing more. See the module doc for why it is sync.
pub trait Device: Send + Sync {
    /// A fresh UI dump, parsed. uiautomator's failures ("could not get idle state",
    /// "null root node", empty output, a file not rewritten) are errors here even when
    /// the command exited 0.
    fn dump_ui(&self) -> Result<UiDump, DeviceError>;

    /// Tap a screen point.
    fn tap(&self, at: Point) -> Result<(), DeviceError>;

    /// Swipe from one point to another over `duration`.
    fn swipe(&self, from: Point, to: Point, duration: Duration) -> Result<(), DeviceError>;

    /// Press a key.
    fn key(&self, code: KeyCode) -> Result<(), DeviceError>;

    /// Open a URL (deep link or https) with `am start -a android.intent.action.VIEW`.
    fn open_url(&self, url: &str) -> Result<(), DeviceError>;

    /// The screen as PNG (`screencap -p`), checked.
    fn screenshot(&self) -> Result<Png, DeviceError>;

    /// Run one command: `argv` is quoted word by word, never interpreted by a shell.
    /// A non-zero exit status is returned in [`ShellOutput::exit_code`], not as an error.
    fn shell(&self, argv: &[&str]) -> Result<ShellOutput, DeviceError>;

    /// Several read-only commands in one round trip (each quoted word by word, joined by
    /// the device layer only): each command's output and exit status, in order. The
    /// default runs them one by one (test doubles); the ADB device sends one line.
    fn shell_batch(&self, cmds: &[&[&str]]) -> Result<Vec<ShellOutput>, DeviceError> {
        cmds.iter().map(|argv| self.shell(argv)).collect()
    }

    /// Which backend reads the screen and sends input: `"uiautomator"` (a process per
    /// call over ADB), or `"u2"` (uiautomator2's resident server). A `u2` device that
    /// fell back for the rest of a job says `"uiautomator"` until the next job.
    fn backend(&self) -> &'static str {
        "uiautomator"
    }

    /// Why the `u2` backend fell back to uiautomator in this job, if it did.
    fn backend_fallback(&self) -> Option<String> {
        None
    }

    /// Back key.
    fn back(&self) -> Result<(), DeviceError> {
        self.key(KeyCode::BACK)
    }

    /// Tap an element: the centre of the visible part of its nearest clickable ancestor
    /// (labels are rarely the click target). Returns where it tapped.
    fn tap_node(&self, node: NodeRef<'_>) -> Result<Point, DeviceError> {
        let at = node.tap_point().ok_or(DeviceError::NotOnScreen)?;
        self.tap(at)?;
        Ok(at)
    }

    /// Tap a recognizer's [`Target`].
    fn tap_target(&self, target: &Target) -> Result<(), DeviceError> {
        self.tap(target.tap)
    }
}

/// A shared device is a device (the executor hands one connection to every job).
impl<D: Device + ?Sized> Device for std::sync::Arc<D> {
    fn dump_ui(&self) -> Result<UiDump, DeviceError> {
        (**self).dump_ui()
    }
    fn tap(&self, at: Point) -> Result<(), DeviceError> {
        (**self).tap(at)
    }
    fn swipe(&self, from: Point, to: Point, duration: Duration) -> Result<(), DeviceError> {
        (**self).swipe(from, to, duration)
    }
    fn key(&self, code: KeyCode) -> Result<(), DeviceError> {
        (**self).key(code)
    }
    fn open_url(&self, url: &str) -> Result<(), DeviceError> {
        (**self).open_url(url)
    }
    fn screenshot(&self) -> Result<Png, DeviceError> {
        (**self).screenshot()
    }
    fn shell(&self, argv: &[&str]) -> Result<ShellOutput, DeviceError> {
        (**self).shell(argv)
    }
    fn shell_batch(&self, cmds: &[&[&str]]) -> Result<Vec<ShellOutput>, DeviceError> {
        (**self).shell_batch(cmds)
    }
    fn backend(&self) -> &'static str {
        (**self).backend()
    }
    fn backend_fallback(&self) -> Option<String> {
        (**self).backend_fallback()
    }
}

/// A borrowed device is a device (tests wrap a device they still inspect afterwards).
impl<D: Device + ?Sized> Device for &D {
    fn dump_ui(&self) -> Result<UiDump, DeviceError> {
        (**self).dump_ui()
    }
    fn tap(&self, at: Point) -> Result<(), DeviceError> {
        (**self).tap(at)
    }
    fn swipe(&self, from: Point, to: Point, duration: Duration) -> Result<(), DeviceError> {
        (**self).swipe(from, to, duration)
    }
    fn key(&self, code: KeyCode) -> Result<(), DeviceError> {
        (**self).key(code)
    }
    fn open_url(&self, url: &str) -> Result<(), DeviceError> {
        (**self).open_url(url)
    }
    fn screenshot(&self) -> Result<Png, DeviceError> {
        (**self).screenshot()
    }
    fn shell(&self, argv: &[&str]) -> Result<ShellOutput, DeviceError> {
        (**self).shell(argv)
    }
    fn shell_batch(&self, cmds: &[&[&str]]) -> Result<Vec<ShellOutput>, DeviceError> {
        (**self).shell_batch(cmds)
    }
    fn backend(&self) -> &'static str {
        (**self).backend()
    }
    fn backend_fallback(&self) -> Option<String> {
        (**self).backend_fallback()
    }
}
