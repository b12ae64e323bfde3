//! `dumpsys window|activity`: the focused activity, in the lines scripts grep for
//! (`mCurrentFocus`, `mFocusedApp`, `mResumedActivity`).

use crate::device::{Device, Exec};

pub(crate) fn run(d: &mut Device, args: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    let act = d.app.focus_activity();
    match args.first() {
        Some(&"window") => {
            e.stdout = format!(
                "WINDOW MANAGER WINDOWS (dumpsys window windows)\n  Window #0 Window{{5e1a7c2 u0 {act}}}:\n    mDisplayId=0 rootTaskId=42 mSession=Session{{3f0c1d 12345:u0a123}}\n\n  mCurrentFocus=Window{{5e1a7c2 u0 {act}}}\n  mFocusedApp=ActivityRecord{{8b2e4f1 u0 {act} t42}}\n"
            )
            .into_bytes()
        }
        Some(&"activity") => {
            e.stdout = format!(
                "ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)\n  mResumedActivity: ActivityRecord{{8b2e4f1 u0 {act} t42}}\n  mFocusedApp=ActivityRecord{{8b2e4f1 u0 {act} t42}}\n"
            )
            .into_bytes()
        }
        _ => {}
    }
    120
}
