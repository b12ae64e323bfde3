//! Scenario format v1 (`sim-phone/README.md`, "Replay mode"): a directory with
//! `scenario.json` and the files it names. [`Scenario::load`] validates everything at load
//! — version, screen ids, file names and their presence, every dump, every transition —
//! so a replay never meets a bad scenario half-way; [`ScenarioError`] names the problem.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::select::{DumpIndex, Selector};

/// The only format version this build reads.
pub const SCENARIO_VERSION: u32 = 1;

/// The scenario's file in its directory.
pub const SCENARIO_FILE: &str = "scenario.json";

/// Default tolerance of a `swipe` trigger, px.
pub const DEFAULT_SWIPE_TOLERANCE_PX: u32 = 60;

/// Why a scenario was refused. The text names the file, the screen and (for JSON) the
/// line and column.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: line {line} column {column}: {msg}")]
    Json {
        path: PathBuf,
        line: usize,
        column: usize,
        msg: String,
    },
    #[error(
        "{path}: version {found} is not supported (this build reads version {SCENARIO_VERSION})"
    )]
    Version { path: PathBuf, found: u32 },
    #[error("{path}: {place} names unknown screen {id:?}")]
    UnknownScreen {
        path: PathBuf,
        place: String,
        id: String,
    },
    #[error("{path}: screen {screen:?}: file name {name:?} is not a plain relative name")]
    BadFileName {
        path: PathBuf,
        screen: String,
        name: String,
    },
    #[error("screen {screen:?}: {path} is missing")]
    MissingFile { screen: String, path: PathBuf },
    #[error("screen {screen:?}: {path} is not a uiautomator dump: {reason}")]
    NotADump {
        screen: String,
        path: PathBuf,
        reason: String,
    },
    #[error("screen {screen:?}: {path} is not a PNG")]
    NotAPng { screen: String, path: PathBuf },
    #[error("{path}: screen {screen:?}, transition {index}: {problem}")]
    Transition {
        path: PathBuf,
        screen: String,
        /// 1-based position in `on`.
        index: usize,
        problem: String,
    },
    #[error("{path}: {problem}")]
    Invalid { path: PathBuf, problem: String },
}

// ---- the file as written ----

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    version: u32,
    start: String,
    screens: BTreeMap<String, ScreenFile>,
    #[serde(default)]
    urls: Vec<UrlRoute>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScreenFile {
    dump: String,
    #[serde(default)]
    screenshot: Option<String>,
    #[serde(default)]
    activity_top: Option<String>,
    #[serde(default)]
    on: Vec<TransitionFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TransitionFile {
    #[serde(default)]
    tap: Option<Selector>,
    #[serde(default)]
    back: Option<bool>,
    #[serde(default)]
    key: Option<i32>,
    #[serde(default)]
    swipe: Option<SwipeSpec>,
    #[serde(default)]
    url: Option<UrlMatch>,
    #[serde(default)]
    collapse_shade: Option<bool>,
    #[serde(default)]
    dumped: Option<bool>,
    to: String,
    #[serde(default)]
    order: Option<OrderSpec>,
}

/// A `swipe` trigger: both ends within `tolerance_px` of the recorded ones.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SwipeSpec {
    pub from: [i32; 2],
    pub to: [i32; 2],
    #[serde(default)]
    pub tolerance_px: Option<u32>,
}

/// A `url` trigger: the link contains this text.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct UrlMatch {
    pub contains: String,
}

/// A global deep link: from any screen, a link containing `contains` leads to `to`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
struct UrlRoute {
    contains: String,
    to: String,
}

/// The order a transition places (recorded in the phone's ledger when it fires).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct OrderSpec {
    pub goods_id: String,
    /// Integer fen.
    pub total_cent: i64,
    #[serde(default = "one")]
    pub quantity: u32,
    /// The chosen options' names, in page order.
    #[serde(default)]
    pub options: Vec<String>,
}

fn one() -> u32 {
    1
}

// ---- the validated scenario ----

/// What makes a transition fire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trigger {
    Tap(Selector),
    /// A keyevent (`back: true` is key 4).
    Key(i32),
    Swipe(SwipeSpec),
    Url(UrlMatch),
    CollapseShade,
    /// Right after this screen's dump has been served.
    Dumped,
}

/// One transition of a screen; `to` is a screen index.
#[derive(Debug, Clone)]
pub struct Transition {
    pub trigger: Trigger,
    pub to: usize,
    pub order: Option<OrderSpec>,
}

/// One recorded screen.
#[derive(Debug)]
pub struct ScreenData {
    pub id: String,
    /// The dump's bytes exactly as recorded.
    pub dump: String,
    pub index: DumpIndex,
    pub screenshot: Option<Vec<u8>>,
    pub activity_top: Option<String>,
    pub on: Vec<Transition>,
    /// The PDD activity in front (`pkg/full.Class`) when the dump has a PDD window (in any
    /// place among its roots: [`DumpIndex::app_root`]): the one `activity_top` names, else
    /// PDD's page activity. `None` when no window of the dump is PDD's (the launcher, say).
    pub pdd_activity: Option<String>,
}

/// PDD's page activity (goods pages and most H5 pages), the default focus in replay.
pub const PDD_PAGE_ACTIVITY: &str =
    "com.xunmeng.pinduoduo/com.xunmeng.pinduoduo.activity.NewPageActivity";

/// The activity a `dumpsys activity top` text names (`ACTIVITY pkg/.Class …`), expanded to
/// `pkg/pkg.Class`.
fn activity_of(top: &str) -> Option<String> {
    let line = top
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("ACTIVITY "))?;
    let comp = line.split_whitespace().next()?;
    let (pkg, class) = comp.split_once('/')?;
    if pkg != crate::ui::PDD || class.is_empty() {
        return None;
    }
    Some(match class.strip_prefix('.') {
        Some(rest) => format!("{pkg}/{pkg}.{rest}"),
        None => comp.to_string(),
    })
}

struct Inner {
    dir: PathBuf,
    screens: Vec<ScreenData>,
    start: usize,
    urls: Vec<(String, usize)>,
}

/// A loaded, validated scenario (cheap to clone).
#[derive(Clone)]
pub struct Scenario {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scenario")
            .field("dir", &self.inner.dir)
            .field("screens", &self.inner.screens.len())
            .field("start", &self.start_id())
            .finish()
    }
}

fn json_err(path: &Path, e: &serde_json::Error) -> ScenarioError {
    ScenarioError::Json {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        msg: e.to_string(),
    }
}

/// A plain relative name: no `/` or `\`, not `.`/`..`, not empty, no NUL.
fn plain_name(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains(['/', '\\', '\0']) && !s.starts_with('~')
}

impl Scenario {
    /// Load and validate the scenario in `dir` (its `scenario.json` and every file it
    /// names).
    pub fn load(dir: &Path) -> Result<Scenario, ScenarioError> {
        let path = dir.join(SCENARIO_FILE);
        let bytes = std::fs::read(&path).map_err(|source| ScenarioError::Read {
            path: path.clone(),
            source,
        })?;
        // The version first, so a v2 file is refused for its version, not its keys.
        let probe: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| json_err(&path, &e))?;
        if let Some(v) = probe.get("version") {
            match v.as_u64() {
                Some(1) => {}
                Some(n) => {
                    return Err(ScenarioError::Version {
                        path,
                        found: u32::try_from(n).unwrap_or(u32::MAX),
                    })
                }
                None => {}
            }
        }
        let file: ScenarioFile = serde_json::from_slice(&bytes).map_err(|e| json_err(&path, &e))?;
        if file.version != SCENARIO_VERSION {
            return Err(ScenarioError::Version {
                path,
                found: file.version,
            });
        }
        if file.screens.is_empty() {
            return Err(ScenarioError::Invalid {
                path,
                problem: "no screens".into(),
            });
        }
        let ids: HashMap<&str, usize> = file
            .screens
            .keys()
            .enumerate()
            .map(|(i, k)| (k.as_str(), i))
            .collect();
        let lookup = |place: String, id: &str| -> Result<usize, ScenarioError> {
            ids.get(id)
                .copied()
                .ok_or_else(|| ScenarioError::UnknownScreen {
                    path: path.clone(),
                    place,
                    id: id.to_string(),
                })
        };
        let start = lookup("start".into(), &file.start)?;
        let mut urls = Vec::new();
        for (i, u) in file.urls.iter().enumerate() {
            if u.contains.is_empty() {
                return Err(ScenarioError::Invalid {
                    path,
                    problem: format!("urls[{i}]: `contains` is empty"),
                });
            }
            urls.push((u.contains.clone(), lookup(format!("urls[{i}].to"), &u.to)?));
        }
        let mut screens = Vec::with_capacity(file.screens.len());
        for (id, s) in &file.screens {
            let mut on = Vec::with_capacity(s.on.len());
            for (k, t) in s.on.iter().enumerate() {
                let bad = |problem: String| ScenarioError::Transition {
                    path: path.clone(),
                    screen: id.clone(),
                    index: k + 1,
                    problem,
                };
                let trigger = trigger_of(t).map_err(&bad)?;
                let to = lookup(format!("screen {id:?}, transition {} `to`", k + 1), &t.to)?;
                if let Some(o) = &t.order {
                    if o.total_cent < 0 {
                        return Err(bad(format!(
                            "order total_cent {} is negative",
                            o.total_cent
                        )));
                    }
                    if o.quantity == 0 {
                        return Err(bad("order quantity is 0".into()));
                    }
                    if o.goods_id.is_empty() {
                        return Err(bad("order goods_id is empty".into()));
                    }
                }
                on.push(Transition {
                    trigger,
                    to,
                    order: t.order.clone(),
                });
            }
            let file_of = |name: &str| -> Result<PathBuf, ScenarioError> {
                if !plain_name(name) {
                    return Err(ScenarioError::BadFileName {
                        path: path.clone(),
                        screen: id.clone(),
                        name: name.to_string(),
                    });
                }
                Ok(dir.join(name))
            };
            let read = |p: &Path| -> Result<Vec<u8>, ScenarioError> {
                match std::fs::read(p) {
                    Ok(b) => Ok(b),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        Err(ScenarioError::MissingFile {
                            screen: id.clone(),
                            path: p.to_path_buf(),
                        })
                    }
                    Err(source) => Err(ScenarioError::Read {
                        path: p.to_path_buf(),
                        source,
                    }),
                }
            };
            let dump_path = file_of(&s.dump)?;
            let dump =
                String::from_utf8(read(&dump_path)?).map_err(|_| ScenarioError::NotADump {
                    screen: id.clone(),
                    path: dump_path.clone(),
                    reason: "not UTF-8".into(),
                })?;
            let index = DumpIndex::parse(&dump).map_err(|reason| ScenarioError::NotADump {
                screen: id.clone(),
                path: dump_path.clone(),
                reason,
            })?;
            let screenshot = match &s.screenshot {
                Some(n) => {
                    let p = file_of(n)?;
                    let b = read(&p)?;
                    if !b.starts_with(b"\x89PNG\r\n\x1a\n") {
                        return Err(ScenarioError::NotAPng {
                            screen: id.clone(),
                            path: p,
                        });
                    }
                    Some(b)
                }
                None => None,
            };
            let activity_top = match &s.activity_top {
                Some(n) => {
                    let p = file_of(n)?;
                    Some(String::from_utf8_lossy(&read(&p)?).into_owned())
                }
                None => None,
            };
            // PDD is in front when the dump has a PDD window, wherever the dump lists it.
            let pdd_activity = (index.app_package() == Some(crate::ui::PDD)).then(|| {
                activity_top
                    .as_deref()
                    .and_then(activity_of)
                    .unwrap_or_else(|| PDD_PAGE_ACTIVITY.to_string())
            });
            screens.push(ScreenData {
                id: id.clone(),
                dump,
                index,
                screenshot,
                activity_top,
                on,
                pdd_activity,
            });
        }
        Ok(Scenario {
            inner: Arc::new(Inner {
                dir: dir.to_path_buf(),
                screens,
                start,
                urls,
            }),
        })
    }

    /// The directory it was loaded from.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Screen ids, in index order.
    pub fn screen_ids(&self) -> Vec<&str> {
        self.inner.screens.iter().map(|s| s.id.as_str()).collect()
    }

    pub fn start_id(&self) -> &str {
        &self.inner.screens[self.inner.start].id
    }

    pub(crate) fn start(&self) -> usize {
        self.inner.start
    }

    pub(crate) fn screen(&self, i: usize) -> &ScreenData {
        // Indices come only from validated lookups; clamp rather than panic regardless.
        let n = self.inner.screens.len().saturating_sub(1);
        &self.inner.screens[i.min(n)]
    }

    /// The screen with this id.
    pub fn screen_by_id(&self, id: &str) -> Option<&ScreenData> {
        self.inner.screens.iter().find(|s| s.id == id)
    }

    pub(crate) fn global_url(&self, url: &str) -> Option<usize> {
        self.inner
            .urls
            .iter()
            .find(|(c, _)| url.contains(c.as_str()))
            .map(|(_, to)| *to)
    }
}

fn trigger_of(t: &TransitionFile) -> Result<Trigger, String> {
    let mut found: Vec<(&str, Trigger)> = Vec::new();
    let flag = |name: &str, v: Option<bool>| -> Result<bool, String> {
        match v {
            Some(true) => Ok(true),
            Some(false) => Err(format!(
                "`{name}: false` is not a trigger (write `{name}: true` or leave it out)"
            )),
            None => Ok(false),
        }
    };
    if let Some(s) = &t.tap {
        if s.is_empty() {
            return Err("`tap` selector is empty (give text, desc, resource_id, text_prefix, desc_prefix or bounds)".into());
        }
        found.push(("tap", Trigger::Tap(s.clone())));
    }
    if flag("back", t.back)? {
        found.push(("back", Trigger::Key(4)));
    }
    if let Some(k) = t.key {
        found.push(("key", Trigger::Key(k)));
    }
    if let Some(s) = &t.swipe {
        found.push(("swipe", Trigger::Swipe(s.clone())));
    }
    if let Some(u) = &t.url {
        if u.contains.is_empty() {
            return Err("`url.contains` is empty".into());
        }
        found.push(("url", Trigger::Url(u.clone())));
    }
    if flag("collapse_shade", t.collapse_shade)? {
        found.push(("collapse_shade", Trigger::CollapseShade));
    }
    if flag("dumped", t.dumped)? {
        found.push(("dumped", Trigger::Dumped));
    }
    match found.len() {
        1 => Ok(found.remove(0).1),
        0 => {
            Err("has no trigger (one of tap, back, key, swipe, url, collapse_shade, dumped)".into())
        }
        _ => Err(format!(
            "has {} triggers ({}); a transition has exactly one",
            found.len(),
            found.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        )),
    }
}
