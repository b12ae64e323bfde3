//! Parse + classify the real-dump-sized screen fixtures (the work done for every dump a
//! flow takes). Goal: ≤ 1 ms per ~60 KB dump, ≥ 10× faster than Python lxml
//! doing the same (`scripts/bench-screens-vs-lxml` runs both and prints the ratio).
//!
//!     cargo bench -p cmautobuy-pdd --bench screens
//!
//! `SCREENS_BENCH_FILES=a.xml,b.xml` benches other files (e.g. a dump from your phone).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use cmautobuy_pdd::screen::{classify, Tree};

/// The fixtures the size of a real dump.
pub const FILES: &[&str] = &[
    "sku_sheet_image_three_dims.xml",
    "sku_sheet_text_two_dims.xml",
    "order_list.xml",
];

fn files() -> Vec<PathBuf> {
    if let Ok(list) = std::env::var("SCREENS_BENCH_FILES") {
        return list.split(',').map(PathBuf::from).collect();
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/screens");
    FILES.iter().map(|f| dir.join(f)).collect()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("screens");
    group
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    for path in files() {
        let Ok(text) = std::fs::read_to_string(&path) else {
            eprintln!("cannot read {}", path.display());
            continue;
        };
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("dump")
            .to_string();
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(format!("parse+classify/{name}"), |b| {
            b.iter(|| {
                let tree = Tree::parse(black_box(&text)).ok();
                black_box(tree.as_ref().map(classify))
            })
        });
        group.bench_function(format!("parse/{name}"), |b| {
            b.iter(|| black_box(Tree::parse(black_box(&text)).ok()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
