//! Flow tests on the simulated phone in-process ([`super::sim_device::SimFlowDevice`]): every
//! catalog goods collected and compared with the catalog (the truth), the failure
//! pages, popups and dump faults on the way, and the action traces.

use chrono::{TimeZone, Utc};
use cmautobuy_contract::{FailureStatus, PddData};
use cmautobuy_sim_phone::{Catalog, DumpFault, Goods, PopupKind, PopupSchedule, SimConfig};

use std::time::Duration;

use super::driver::{drive, DriveLimits, DriveReport, NoEffects};
use super::guard::GuardedDevice;
use super::sim_device::SimFlowDevice;
use crate::artifacts::AttemptArtifacts;
use crate::clock::VirtualClock;
use crate::device::{Device, DeviceError, KeyCode, Png, ShellOutput, UiDump};
use crate::flow::collect::{CollectFlow, CollectLimits, CollectTask};
use crate::flow::FlowOutcome;
use crate::screen::Point;

fn catalog() -> Catalog {
    Catalog::load(&Catalog::bundled_dir()).expect("bundled catalog")
}

fn phone(cfg: impl FnOnce(&mut SimConfig)) -> SimFlowDevice {
    let mut c = SimConfig::new(catalog());
    c.start_time = Some(Utc.with_ymd_and_hms(2026, 11, 30, 8, 0, 0).unwrap());
    cfg(&mut c);
    SimFlowDevice::new(c.build_device().expect("device"))
}

fn collect(dev: &SimFlowDevice, goods_id: &str, title: Option<&str>) -> DriveReport {
    collect_with(dev, goods_id, title, None)
}

fn collect_with(
    dev: &SimFlowDevice,
    goods_id: &str,
    title: Option<&str>,
    artifacts: Option<&mut AttemptArtifacts>,
) -> DriveReport {
    let mut flow = CollectFlow::new(
        CollectTask {
            goods_id: goods_id.into(),
            expected_title: title.map(str::to_string),
        },
        CollectLimits::default(),
    )
    .expect("valid task");
    let clock = VirtualClock::new(Utc.with_ymd_and_hms(2026, 11, 30, 0, 0, 0).unwrap());
    drive(
        &mut flow,
        &GuardedDevice::new(dev, false),
        &mut NoEffects,
        &clock,
        artifacts,
        DriveLimits::default(),
    )
}

/// (options by key in page order, price in fen, available).
type SkuRow = (Vec<(String, String)>, Option<i64>, bool);

/// The pdd_data the catalog says a collect must report (options, prices, availability).
pub(crate) fn expected_skus(g: &Goods) -> Vec<SkuRow> {
    let size = g.dimensions.iter().position(|d| d.key == "size");
    let read = size.filter(|_| g.dimensions.len() >= 2);
    let full = g.completions(&vec![None; g.dimensions.len()]);
    full.iter()
        .map(|c| {
            let opts: Vec<(String, String)> = g
                .dimensions
                .iter()
                .zip(c)
                .map(|(d, &i)| (d.key.clone(), d.options[i].name.clone()))
                .collect();
            let sel: Vec<Option<usize>> = c.iter().map(|&i| Some(i)).collect();
            let available = g.stock_of(c) > 0;
            // The price is read with every dimension but the size selected: known when
            // that combination has any size in stock.
            let mut partial = sel.clone();
            if let Some(r) = read {
                partial[r] = None;
            }
            let combo_available = g.stock_of_partial(&partial) > 0;
            let price = combo_available.then(|| g.unit_price_cent(&sel));
            (opts, price, available)
        })
        .collect()
}

fn actual_skus(d: &PddData) -> Vec<SkuRow> {
    let keys: Vec<String> = d.dimensions.iter().map(|x| x.key.clone()).collect();
    d.skus
        .iter()
        .map(|s| {
            let opts = keys
                .iter()
                .filter_map(|k| s.options.get(k).map(|v| (k.clone(), v.clone())))
                .collect();
            (opts, s.price_cent.map(|f| f.get()), s.available)
        })
        .collect()
}

fn collected(r: &DriveReport) -> &PddData {
    match &r.outcome {
        FlowOutcome::Collected(d) => d,
        other => panic!("not collected: {other:?}\ntrace: {:#?}", r.trace),
    }
}

fn failure(r: &DriveReport) -> (FailureStatus, String, String) {
    match &r.outcome {
        FlowOutcome::Failed(f) => (
            f.status,
            f.code.as_str().to_string(),
            f.step.as_str().to_string(),
        ),
        other => panic!("not a failure: {other:?}"),
    }
}

fn collectable(g: &Goods) -> bool {
    g.redirect_to.is_none()
        && !g.login_required
        && !g.risk_verification
        && !g.delisted
        && !g.dimensions.is_empty()
        // Its deep link leaves the previous page on screen: a collect of it must fail,
        // not read that page (the goods id `dumpsys activity top` shows tells:
        // `a_deep_link_that_fails_leaves_the_previous_goods_and_the_collect_fails`).
        && !g.deep_link_fails
}

#[test]
fn every_catalog_goods_is_collected_as_the_catalog_says() {
    let cat = catalog();
    let dev = phone(|_| {});
    for g in cat.goods.iter().filter(|g| collectable(g)) {
        let r = collect(&dev, &g.goods_id, Some(&g.title));
        let d = collected(&r);
        cmautobuy_contract::validate::check_pdd_data(d).expect("valid pdd_data");
        assert_eq!(d.goods_id, g.goods_id);
        assert_eq!(d.title.as_deref(), Some(g.title.as_str()));
        assert_eq!(
            d.shop_name.as_deref(),
            Some(g.shop.as_str()),
            "{}",
            g.goods_id
        );
        let dims: Vec<(String, String)> = d
            .dimensions
            .iter()
            .map(|x| (x.key.clone(), x.name.clone()))
            .collect();
        let want: Vec<(String, String)> = g
            .dimensions
            .iter()
            .map(|x| (x.key.clone(), x.name.clone()))
            .collect();
        assert_eq!(dims, want, "{}", g.goods_id);
        assert_eq!(actual_skus(d), expected_skus(g), "{}", g.goods_id);
        for s in &d.skus {
            assert_ne!(s.price_cent.map(|p| p.get()), Some(0));
            assert!(!s.price_observed_at.contains_key("size"), "never a size");
            if s.price_cent.is_some() {
                assert!(!s.price_observed_at.is_empty());
                assert_eq!(s.list_price_cent.map(|p| p.get()), g.list_price_cent);
            } else {
                assert!(s.price_observed_at.is_empty());
            }
        }
        let combos = d.skus.len()
            / g.dimensions
                .iter()
                .find(|x| x.key == "size")
                .filter(|_| g.dimensions.len() >= 2)
                .map_or(1, |x| x.options.len());
        assert!(
            r.stats.dumps as usize <= combos + 4,
            "{}: {} dumps for {combos} combinations\n{:#?}",
            g.goods_id,
            r.stats.dumps,
            r.trace
        );
        eprintln!(
            "{} combos={combos} dumps={} taps={} swipes={}",
            g.goods_id, r.stats.dumps, r.stats.taps, r.stats.swipes
        );
    }
}

#[test]
fn two_dimension_goods_take_c_plus_two_dumps_and_the_trace_shows_why() {
    let dev = phone(|_| {});
    let r = collect(&dev, "602938475610", None);
    collected(&r);
    assert_eq!(r.stats.dumps, 2 + 2, "{:#?}", r.trace);
    let kinds: Vec<String> = r
        .trace
        .iter()
        .map(|t| format!("{}:{}", t.kind, t.step.as_deref().unwrap_or("")))
        .collect();
    assert_eq!(
        kinds,
        [
            "open_url:open_goods",
            "observe:open_goods",
            "read_goods_id:check_goods",
            "screenshot:check_goods",
            "tap:open_sku_sheet",
            "observe:open_sku_sheet",
            "tap:select_color",
            "observe:select_color",
            "tap:select_color",
            "observe:select_color",
        ]
    );
}

#[test]
fn a_redirect_is_goods_mismatch_never_success() {
    let cat = catalog();
    let g = cat.goods("671122334455").expect("redirecting goods");
    let dev = phone(|_| {});
    // With the task's title and without: the goods id `dumpsys activity top` shows (the
    // redirect's target) decides, and is named.
    for title in [Some(g.title.as_str()), None] {
        let r = collect(&dev, &g.goods_id, title);
        assert_eq!(
            failure(&r),
            (
                FailureStatus::Failed,
                "GOODS_MISMATCH".into(),
                "check_goods".into()
            )
        );
        let FlowOutcome::Failed(f) = &r.outcome else {
            unreachable!()
        };
        assert_eq!(f.diagnostics["observed_goods_id"], "737116531267");
        assert_eq!(f.diagnostics["observed_by"], "activity_top");
        assert!(f.message.contains("737116531267"), "{}", f.message);
        // Two looks (dump + read each) before the verdict.
        assert_eq!(r.stats.goods_id_reads, 2, "{:#?}", r.trace);
    }
}

#[test]
fn the_simulated_phone_prints_the_displayed_goods_id_in_activity_top() {
    use crate::screen::activity::{displayed_goods_id, ACTIVITY_TOP_ARGV};
    use crate::screen::TopGoods;
    let dev = phone(|_| {});
    let top = || displayed_goods_id(&dev.shell(ACTIVITY_TOP_ARGV).unwrap().stdout_text());
    assert_eq!(top(), TopGoods::NotShown, "the home page shows no goods");
    for (open, shown) in [
        ("602938475610", "602938475610"),
        ("671122334455", "737116531267"), // a redirect: the target's id
        ("811223344509", "737116531267"), // its deep link fails: the page stays
    ] {
        dev.open_url(&format!(
            "pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id={open}"
        ))
        .unwrap();
        assert_eq!(top(), TopGoods::Shown(shown.into()), "{open}");
    }
}

#[test]
fn a_collect_reports_the_observed_goods_id_and_its_proof() {
    let dev = phone(|_| {});
    let r = collect(&dev, "602938475610", None);
    let d = collected(&r);
    assert_eq!(d.goods_id, "602938475610");
    assert_eq!(d.extra["goods_identity"], "activity_top");
    assert_eq!(r.stats.goods_id_reads, 1);
    // A page that prints the id needs no read.
    let dev = phone(|c| c.show_goods_id = true);
    let r = collect(&dev, "602938475610", None);
    assert_eq!(collected(&r).extra["goods_identity"], "goods_id_on_page");
    assert_eq!(r.stats.goods_id_reads, 0);
}

#[test]
fn a_deep_link_that_fails_leaves_the_previous_goods_and_the_collect_fails() {
    let dev = phone(|_| {});
    collected(&collect(&dev, "811223344510", None));
    // The collect left 510's sheet open: close it, 510's goods page stays on screen.
    dev.back().unwrap();
    let r = collect(&dev, "811223344509", None);
    assert_eq!(
        failure(&r),
        (
            FailureStatus::Failed,
            "GOODS_MISMATCH".into(),
            "check_goods".into()
        ),
        "{:#?}",
        r.trace
    );
}

#[test]
fn login_risk_and_delisted_pages_end_with_their_codes() {
    let dev = phone(|_| {});
    let r = collect(&dev, "682233445566", None);
    assert_eq!(
        failure(&r),
        (
            FailureStatus::ManualReview,
            "LOGIN_REQUIRED".into(),
            "open_goods".into()
        )
    );
    let root = tempfile::tempdir().unwrap();
    let mut art = AttemptArtifacts::create(root.path(), "risk-task", "a1").unwrap();
    let r = collect_with(&dev, "693344556677", None, Some(&mut art));
    assert_eq!(
        failure(&r),
        (
            FailureStatus::ManualReview,
            "RISK_VERIFICATION".into(),
            "open_goods".into()
        )
    );
    assert!(
        art.entries().iter().any(|e| e.file.ends_with(".png")),
        "a screenshot of the risk page: {:?}",
        art.entries()
    );
    let r = collect(&dev, "748899001122", None);
    assert_eq!(
        failure(&r),
        (
            FailureStatus::Failed,
            "GOODS_UNAVAILABLE".into(),
            "open_goods".into()
        )
    );
}

#[test]
fn popups_and_failed_dumps_on_the_way_are_survived() {
    let cat = catalog();
    let g = cat.goods("737116531267").unwrap();
    let dev = phone(|c| {
        c.popups = PopupSchedule::At(vec![(1, PopupKind::RedPacket), (2, PopupKind::TeenMode)]);
        c.faults.dump_faults = vec![
            (1, DumpFault::IdleState),
            (3, DumpFault::NullRoot),
            (5, DumpFault::Stale),
        ];
    });
    let r = collect(&dev, &g.goods_id, Some(&g.title));
    let d = collected(&r);
    assert_eq!(actual_skus(d), expected_skus(g));
    assert!(r.stats.dump_failures >= 2, "{:?}", r.stats);
    // And a popup laid over the open sheet mid-way (after the first colour tap).
    let dev = Hooked::new(phone(|_| {}), Some(6), None);
    let r = collect_on(&dev, &g.goods_id, Some(&g.title));
    assert_eq!(actual_skus(collected(&r)), expected_skus(g));
    assert!(r
        .trace
        .iter()
        .any(|t| t.step.as_deref() == Some("dismiss_popup")));
}

#[test]
fn a_device_that_stops_answering_is_retry_wait() {
    let dev = Hooked::new(phone(|_| {}), None, Some(5));
    let r = collect_on(&dev, "602938475610", None);
    let (status, code, _) = failure(&r);
    assert_eq!(
        (status, code.as_str()),
        (FailureStatus::RetryWait, "DEVICE_OFFLINE")
    );
}

/// The simulated phone with scripted trouble: a popup after the Nth call, offline after
/// the Nth call.
struct Hooked {
    inner: SimFlowDevice,
    calls: std::sync::atomic::AtomicU32,
    popup_at: Option<u32>,
    offline_after: Option<u32>,
}

impl Hooked {
    fn new(inner: SimFlowDevice, popup_at: Option<u32>, offline_after: Option<u32>) -> Hooked {
        Hooked {
            inner,
            calls: std::sync::atomic::AtomicU32::new(0),
            popup_at,
            offline_after,
        }
    }

    fn tick(&self) -> Result<(), DeviceError> {
        let calls = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        if self.popup_at == Some(calls) {
            self.inner.phone().app_mut().show_popup(PopupKind::Upgrade);
        }
        if self.offline_after.is_some_and(|n| calls > n) {
            return Err(DeviceError::Offline {
                serial: "sim".into(),
                state: "offline".into(),
            });
        }
        Ok(())
    }
}

impl Device for Hooked {
    fn dump_ui(&self) -> Result<UiDump, DeviceError> {
        self.tick()?;
        self.inner.dump_ui()
    }
    fn tap(&self, at: Point) -> Result<(), DeviceError> {
        self.tick()?;
        self.inner.tap(at)
    }
    fn swipe(&self, from: Point, to: Point, d: Duration) -> Result<(), DeviceError> {
        self.tick()?;
        self.inner.swipe(from, to, d)
    }
    fn key(&self, code: KeyCode) -> Result<(), DeviceError> {
        self.tick()?;
        self.inner.key(code)
    }
    fn open_url(&self, url: &str) -> Result<(), DeviceError> {
        self.tick()?;
        self.inner.open_url(url)
    }
    fn screenshot(&self) -> Result<Png, DeviceError> {
        self.tick()?;
        self.inner.screenshot()
    }
    fn shell(&self, argv: &[&str]) -> Result<ShellOutput, DeviceError> {
        self.tick()?;
        self.inner.shell(argv)
    }
}

fn collect_on<D: Device>(dev: &D, goods_id: &str, title: Option<&str>) -> DriveReport {
    let mut flow = CollectFlow::new(
        CollectTask {
            goods_id: goods_id.into(),
            expected_title: title.map(str::to_string),
        },
        CollectLimits::default(),
    )
    .expect("valid task");
    let clock = VirtualClock::new(Utc.with_ymd_and_hms(2026, 11, 30, 0, 0, 0).unwrap());
    drive(
        &mut flow,
        &GuardedDevice::new(dev, false),
        &mut NoEffects,
        &clock,
        None,
        DriveLimits::default(),
    )
}

#[test]
fn a_bad_goods_id_is_refused_before_the_phone_is_touched() {
    let e = CollectFlow::new(
        CollectTask {
            goods_id: "1; rm -rf /".into(),
            expected_title: None,
        },
        CollectLimits::default(),
    )
    .err()
    .expect("refused");
    assert_eq!(e.code.as_str(), "INVALID_TASK_PAYLOAD");
}

/// The manifest is the ordered record of the attempt — every device action in
/// order between the files it saved, each tap with the node it aimed at.
#[test]
fn a_drive_records_its_actions_in_order_with_their_targets() {
    use crate::artifacts::{read_manifest_elements, ManifestElement};
    let dev = phone(|_| {});
    let root = tempfile::tempdir().unwrap();
    let mut art = AttemptArtifacts::create(root.path(), "t-rec", "att-rec").unwrap();
    let r = collect_with(&dev, "602938475610", None, Some(&mut art));
    collected(&r);
    let elements = read_manifest_elements(art.dir()).unwrap();
    assert_eq!(elements, art.elements());
    let seqs: Vec<u32> = elements.iter().map(|e| e.seq().unwrap()).collect();
    assert_eq!(seqs, (1..=elements.len() as u32).collect::<Vec<_>>());
    let kinds: Vec<String> = elements
        .iter()
        .map(|e| match e {
            ManifestElement::Artifact(a) => a.action.clone().unwrap(),
            ManifestElement::Action(a) => a.action.clone(),
        })
        .collect();
    // The same order as the driver's trace (open, dump, activity top, screenshot, then a
    // tap before each dump).
    assert_eq!(
        kinds,
        [
            "open_url",
            "dump",
            "activity_top",
            "screenshot",
            "tap",
            "dump",
            "tap",
            "dump",
            "tap",
            "dump"
        ],
        "{elements:#?}"
    );
    let taps: Vec<_> = elements
        .iter()
        .filter_map(|e| match e {
            ManifestElement::Action(a) if a.action == "tap" => Some(a),
            _ => None,
        })
        .collect();
    for t in &taps {
        assert_eq!(t.result.as_deref(), Some("sent"));
        let target = t.target.clone().flatten().expect("a target node");
        let [l, top, right, bottom] = target.bounds;
        let [x, y] = t.at.unwrap();
        let label = t.label.as_deref().unwrap();
        assert!(!target.text.is_empty() || !target.desc.is_empty(), "{t:?}");
        // The label node itself, or the button it sits in, holds the point.
        assert!(
            (l <= x && x < right && top <= y && y < bottom)
                || target.text.starts_with(label)
                || target.desc.starts_with(label),
            "{t:?}"
        );
    }
    // The option taps aimed at the option labels the flow named.
    assert!(
        taps[1..].iter().all(|t| {
            let target = t.target.clone().flatten().unwrap();
            let label = t.label.as_deref().unwrap();
            target.text == label || target.desc.starts_with(label) || target.text.starts_with(label)
        }),
        "{taps:#?}"
    );
    assert!(matches!(
        &elements[0],
        ManifestElement::Action(a) if a.url.as_deref().is_some_and(|u| u.contains("602938475610"))
    ));
}
