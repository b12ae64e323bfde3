//! Parses and classifies each dump given on the command line N times (default 50):
//! a fixed amount of work for `valgrind --tool=callgrind`, whose instruction counts are
//! repeatable where wall-clock benchmarks on a shared VM are not (BENCHMARKS.md, screens).
//!
//!     cargo build --release -p cmautobuy-client --example parse_loop
//!     valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!       target/release/examples/parse_loop fixtures/screens/order_list.xml

use std::process::ExitCode;

use cmautobuy_client::screen::{classify, Tree};

fn main() -> ExitCode {
    let mut files = Vec::new();
    let mut rounds = 50usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--rounds" {
            match args.next().and_then(|n| n.parse().ok()) {
                Some(n) => rounds = n,
                None => {
                    eprintln!("--rounds needs a number");
                    return ExitCode::from(2);
                }
            }
        } else {
            files.push(a);
        }
    }
    let mut texts = Vec::new();
    for f in &files {
        match std::fs::read(f) {
            Ok(b) => texts.push(String::from_utf8_lossy(&b).into_owned()),
            Err(e) => {
                eprintln!("{f}: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let mut nodes = 0usize;
    for _ in 0..rounds {
        for t in &texts {
            if let Ok(tree) = Tree::parse(std::hint::black_box(t)) {
                let screen = classify(&tree);
                std::hint::black_box(&screen);
                nodes += tree.len();
            }
        }
    }
    println!("{nodes} nodes parsed");
    ExitCode::SUCCESS
}
