//! Why a UI dump could not be turned into a tree.
//!
//! Each variant has a stable SCREAMING_SNAKE code (logged, shown by `inspect`, kept in
//! task failure details) and says whether dumping again can help. All of them map to
//! the flow-level failure code `UI_DUMP_FAILED` (`decisions.md` §5).

use thiserror::Error;

/// A UI dump that yields no usable tree. Never a panic: every output of the device
/// maps to a tree or to one of these.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DumpError {
    /// Nothing (or only whitespace) came back. Seen when the dump races an activity
    /// change or the shell was cut off.
    #[error("the UI dump output is empty")]
    Empty,
    /// "ERROR: could not get idle state": the screen kept animating. The command may
    /// still exit 0, so this is recognised from the text.
    #[error("uiautomator could not get idle state (the screen is animating)")]
    IdleState,
    /// "null root node returned by UiTestAutomationBridge": no window to dump. Any XML
    /// printed after it may be a stale file, so it is not trusted.
    #[error("uiautomator got a null root node from UiTestAutomationBridge")]
    NullRoot,
    /// Another UiAutomation user (uiautomator2 or Appium server) holds the service;
    /// dumping again will not help until it is stopped.
    #[error("another UiAutomation service is registered (uiautomator2/Appium running?)")]
    AutomationBusy,
    /// The XML is not well formed: usually a transfer cut short.
    #[error("the UI dump is not well-formed XML at byte {position}: {detail}")]
    Malformed { detail: String, position: u64 },
    /// The output holds no `<hierarchy>` and no known uiautomator error: the command
    /// itself is wrong or missing ("uiautomator: not found").
    #[error("the output holds no <hierarchy>: {snippet:?}")]
    NoHierarchy { snippet: String },
    /// `<hierarchy>` holds no window at all.
    #[error("the hierarchy holds no nodes")]
    NoNodes,
}

impl DumpError {
    /// A stable code for logs and failure details.
    pub fn code(&self) -> &'static str {
        match self {
            DumpError::Empty => "UI_DUMP_EMPTY",
            DumpError::IdleState => "UI_DUMP_IDLE_STATE",
            DumpError::NullRoot => "UI_DUMP_NULL_ROOT",
            DumpError::AutomationBusy => "UI_DUMP_AUTOMATION_BUSY",
            DumpError::Malformed { .. } => "UI_DUMP_MALFORMED",
            DumpError::NoHierarchy { .. } => "UI_DUMP_NO_HIERARCHY",
            DumpError::NoNodes => "UI_DUMP_NO_NODES",
        }
    }

    /// Whether dumping again (after a short wait) can be expected to succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            DumpError::Empty
            | DumpError::IdleState
            | DumpError::NullRoot
            | DumpError::Malformed { .. }
            | DumpError::NoNodes => true,
            DumpError::AutomationBusy | DumpError::NoHierarchy { .. } => false,
        }
    }

    /// The client failure code of `decisions.md` §5 this maps to.
    pub fn failure_code(&self) -> &'static str {
        "UI_DUMP_FAILED"
    }
}
