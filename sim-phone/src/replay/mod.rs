//! Replay mode: instead of the simulated app's catalog, the phone plays back a recorded
//! scenario (format v1, `sim-phone/README.md` "Replay mode"): real dumps served
//! byte-for-byte, the client's actions moving between them. `scenario` loads and validates
//! the directory, `select` indexes a dump and matches tap selectors, `player` is the state
//! machine, `log` the replay log. The device consults the player in `device/replay.rs`.

pub mod log;
pub mod player;
pub mod scenario;
pub mod select;

pub use log::{read_replay_log, ReplayLogEntry};
pub use player::{Player, Step};
pub use scenario::{OrderSpec, Scenario, ScenarioError, ScreenData, Trigger, SCENARIO_VERSION};
pub use select::{DumpIndex, DumpNode, Selector};
