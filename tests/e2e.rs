//! End-to-end tests across the crates: the real client (claim loop, flow executor, ADB
//! device, outbox, HTTP gateway) against the bundled mock Admin and the simulated phone
//! over the real ADB protocol — directly over TCP and through the real adb server.

use std::path::Path;

use cmautobuy_client::rehearse::{rehearse, RehearseOptions, SimRoute, Summary};
use cmautobuy_e2e::{actual_skus, catalog, expected_skus, last_result, AdbServer, Admin};
use cmautobuy_sim_phone::DumpFault;

/// Runs `rehearse` against `admin` (so the test can read what the Admin stored).
fn run(admin: &Admin, data: &Path, f: impl FnOnce(&mut RehearseOptions)) -> Summary {
    let mut o = RehearseOptions {
        admin: Some(admin.url.clone()),
        data_dir: Some(data.to_path_buf()),
        json: true,
        // The whole catalog: the goods that must fail are checked too.
        failure_paths: true,
        ..RehearseOptions::default()
    };
    f(&mut o);
    // rehearse builds its own runtime: run it off this thread's.
    std::thread::spawn(move || rehearse(o))
        .join()
        .expect("rehearse thread")
        .expect("rehearse runs")
}

/// Every catalog goods: the Admin stores exactly the catalog's options, prices (fen)
/// and availability; the failure pages end with their codes.
fn check_batch(admin: &Admin, s: &Summary) {
    let cat = catalog();
    assert!(s.ok, "not every task ended as expected: {:#?}", s.tasks);
    assert_eq!(s.tasks.len(), cat.goods.len());
    for line in &s.tasks {
        let goods_id = line
            .id
            .rsplit('-')
            .next()
            .expect("id ends with the goods id");
        let g = cat.goods(goods_id).expect("catalog goods");
        let task = admin.task(&line.id);
        let (kind, body) = last_result(&task).expect("the Admin stored an outcome");
        if line.expected == "succeeded" {
            assert_eq!(kind, "result", "{}", line.id);
            let pdd = &body["pdd_data"];
            assert_eq!(pdd["goods_id"], goods_id);
            assert_eq!(pdd["price_granularity"], "color");
            assert_eq!(pdd["shop_name"], g.shop.as_str());
            assert_eq!(actual_skus(pdd), expected_skus(g), "{goods_id}");
        } else {
            assert_eq!(kind, "failure", "{}", line.id);
            let ids = body["diagnostics"]["artifact_ids"]
                .as_array()
                .expect("artifact ids");
            assert!(!ids.is_empty(), "{}: artifacts reported", line.id);
            let reference = body["diagnostics"]["artifact_ref"].as_str().unwrap_or("");
            assert!(reference.contains(":artifacts/"), "{reference}");
        }
    }
}

#[test]
fn collect_directly_over_tcp_every_catalog_goods() {
    let admin = Admin::start();
    let data = tempfile::tempdir().unwrap();
    let s = run(&admin, data.path(), |_| {});
    check_batch(&admin, &s);
    // Dumps per collect task without popups or failures: at most C + 4.
    for l in s.tasks.iter().filter(|l| l.outcome == "succeeded") {
        let c = l.combinations.expect("combinations");
        assert!(
            l.dumps as usize <= c + 4,
            "{}: {} dumps for C={c}",
            l.id,
            l.dumps
        );
    }
    // The risk page: manual_review with a screenshot among its artifacts.
    let risk = s
        .tasks
        .iter()
        .find(|l| l.outcome == "manual_review:RISK_VERIFICATION")
        .expect("risk task");
    assert!(risk
        .artifact_ref
        .as_deref()
        .is_some_and(|r| r.contains(":artifacts/")));
    let pngs = files_under(&data.path().join("artifacts"))
        .into_iter()
        .filter(|p| p.contains("693344556677") && p.ends_with(".png"))
        .count();
    assert!(pngs >= 1, "a screenshot of the risk page");
}

/// Every file below `root` (the artifacts: `<root>/<task>/<attempt>/NN-step.ext`).
fn files_under(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.to_string_lossy().into_owned());
            }
        }
    }
    out
}

#[test]
fn collect_through_the_real_adb_server() {
    let server = AdbServer::start();
    let admin = Admin::start();
    let data = tempfile::tempdir().unwrap();
    let s = run(&admin, data.path(), |o| {
        o.sim_route = SimRoute::AdbServer(server.addr());
    });
    check_batch(&admin, &s);
    assert!(s.device.starts_with("127.0.0.1:"), "{}", s.device);
}

#[test]
fn popups_and_failed_dumps_on_the_way_are_survived() {
    let admin = Admin::start();
    let data = tempfile::tempdir().unwrap();
    let s = run(&admin, data.path(), |o| {
        o.popups_percent = 40;
        o.dump_faults = vec![
            (2, DumpFault::IdleState),
            (9, DumpFault::NullRoot),
            (15, DumpFault::Stale),
            (30, DumpFault::IdleState),
        ];
    });
    check_batch(&admin, &s);
}
