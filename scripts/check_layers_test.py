#!/usr/bin/env python3
"""Tests for scripts/check-layers: tiny fake crates in temporary directories.

Run: python3 scripts/check_layers_test.py
"""

import contextlib
import io
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "check-layers")
REPO = os.path.dirname(HERE)


def load_checker():
    loader = SourceFileLoader("check_layers", SCRIPT)
    spec = spec_from_loader("check_layers", loader)
    mod = module_from_spec(spec)
    loader.exec_module(mod)
    return mod


cl = load_checker()

CARGO = '[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n'


class Workspace:
    """A temporary workspace: crate(name, {path: text}) writes a crate."""

    def __init__(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = self.tmp.name

    def crate(self, name, files, cargo_extra=""):
        d = os.path.join(self.root, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "Cargo.toml"), "w") as f:
            f.write(CARGO.format(name=name) + cargo_extra)
        for rel, text in files.items():
            p = os.path.join(d, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)

    def analyse(self):
        return cl.analyse(self.root)

    def run(self, *args):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = cl.main(["--root", self.root, *args])
        return code, out.getvalue()

    def close(self):
        self.tmp.cleanup()


def edges(res):
    """{(a, b): sorted lines} with repository-relative paths."""
    out = {}
    for crate, _files, es, _sccs, _src in res.crates:
        for (a, b), lines in es.items():
            out[(crate.disp(a), crate.disp(b))] = sorted({ln for ln, _via in lines})
    return out


def cycles(res):
    return sorted(sorted(crate.disp(f) for f in comp) for crate, _f, _e, sccs, _s in res.crates for comp in sccs)


def flow(res):
    return [(path, line, rules) for path, line, _text, rules in res.flow]


class Base(unittest.TestCase):
    def setUp(self):
        self.ws = Workspace()

    def tearDown(self):
        self.ws.close()


class Cycles(Base):
    def test_two_file_cycle_through_use_super(self):
        self.ws.crate(
            "k",
            {
                "src/lib.rs": "pub mod m;\n",
                "src/m/mod.rs": "mod child;\npub use child::C;\npub struct X;\n",
                "src/m/child.rs": "use super::X;\npub struct C(X);\n",
            },
        )
        res = self.ws.analyse()
        self.assertEqual(cycles(res), [["k/src/m/child.rs", "k/src/m/mod.rs"]])
        self.assertEqual(edges(res)[("k/src/m/mod.rs", "k/src/m/child.rs")], [2])
        self.assertEqual(edges(res)[("k/src/m/child.rs", "k/src/m/mod.rs")], [1])
        code, out = self.ws.run()
        self.assertEqual(code, 1)
        self.assertIn("k/src/m/child.rs:1: use super::X;", out)
        self.assertIn("k/src/m/mod.rs:2: pub use child::C;", out)
        self.assertIn("1 cycles", out)

    def test_three_file_cycle_through_inline_paths(self):
        self.ws.crate(
            "k",
            {
                "src/lib.rs": "mod a;\nmod b;\nmod c;\n",
                "src/a.rs": "pub fn f() {\n    crate::b::g()\n}\n",
                "src/b.rs": "pub fn g() {\n    let _ = super::c::H;\n}\n",
                "src/c.rs": (
                    "pub const H: u8 = 1;\n"
                    "mod inner { pub fn z() {} }\n"
                    "fn k() { self::inner::z(); }\n"
                    "fn j() -> crate::a::Thing { crate::a::f() }\n"
                ),
            },
        )
        res = self.ws.analyse()
        self.assertEqual(cycles(res), [["k/src/a.rs", "k/src/b.rs", "k/src/c.rs"]])
        e = edges(res)
        self.assertEqual(e[("k/src/a.rs", "k/src/b.rs")], [2])
        self.assertEqual(e[("k/src/b.rs", "k/src/c.rs")], [2])
        self.assertEqual(e[("k/src/c.rs", "k/src/a.rs")], [4])
        # self::inner is an inline module of c.rs: no edge, no self-edge
        self.assertEqual(len(e), 3)

    def test_mod_rs_that_only_declares_children_is_no_cycle(self):
        self.ws.crate(
            "k",
            {
                "src/lib.rs": "pub mod m;\n",
                "src/m/mod.rs": "//! children\npub mod a;\npub mod b;\n#[cfg(feature = \"x\")]\nmod c;\n",
                "src/m/a.rs": "use super::b::B;\npub struct A(B);\n",
                "src/m/b.rs": "pub struct B;\n",
                "src/m/c.rs": "use crate::m::a::A;\n",
            },
        )
        res = self.ws.analyse()
        self.assertEqual(cycles(res), [])
        self.assertEqual(set(edges(res)), {("k/src/m/a.rs", "k/src/m/b.rs"), ("k/src/m/c.rs", "k/src/m/a.rs")})
        code, out = self.ws.run()
        self.assertEqual(code, 0)
        self.assertEqual(out.strip(), "check-layers: 1 crates, 5 files, 2 edges, 0 cycles, no pdd/src/")

    def test_nested_multi_line_use_groups(self):
        self.ws.crate(
            "k",
            {
                "src/lib.rs": "mod a;\nmod b;\nmod c;\npub struct Root;\n",
                "src/a.rs": "pub struct X;\n",
                "src/b/mod.rs": "pub mod z;\npub struct Y;\npub struct Z;\n",
                "src/b/z.rs": "pub struct W;\n",
                "src/c.rs": (
                    "pub(crate) use crate::{\n"
                    "    a::X,\n"
                    "    b::{Y,\n"
                    "        z::{self as zz, W}},\n"
                    "    Root,\n"
                    "};\n"
                    "fn f() -> zz::W { todo!() }\n"
                ),
            },
        )
        e = edges(self.ws.analyse())
        self.assertEqual(e[("k/src/c.rs", "k/src/a.rs")], [2])
        self.assertEqual(e[("k/src/c.rs", "k/src/b/mod.rs")], [3])
        self.assertEqual(e[("k/src/c.rs", "k/src/b/z.rs")], [4, 7])  # 7: through the alias
        self.assertEqual(e[("k/src/c.rs", "k/src/lib.rs")], [5])

    def test_comments_strings_and_chars_are_ignored(self):
        self.ws.crate(
            "k",
            {
                "src/lib.rs": "mod a;\nmod b;\n",
                "src/a.rs": (
                    "// use crate::b::B;\n"
                    "/* crate::b::B /* nested */ crate::b::B */\n"
                    "/// [`crate::b::B`]\n"
                    'const S: &str = "crate::b::B \\" crate::b::B";\n'
                    'const R: &str = r#"crate::b::B " crate::b::B"#;\n'
                    'const BS: &[u8] = br"crate::b::B";\n'
                    "const Q: char = '\"'; const E: char = '\\''; const U: char = '\\u{22}';\n"
                    "const BQ: u8 = b'\"'; const BS2: char = '\\\\'; const QQ: &str = \"'\";\n"
                    "fn f<'a>(x: &'a str) -> &'a str { x }\n"
                    "const T: &str = \"after the lifetimes crate::b::B\";\n"
                    "pub struct A;\n"
                ),
                "src/b.rs": "use crate::a::A;\npub struct B(A);\n",
            },
        )
        res = self.ws.analyse()
        self.assertEqual(cycles(res), [])
        self.assertEqual(set(edges(res)), {("k/src/b.rs", "k/src/a.rs")})

    def test_char_literal_quote_does_not_hide_code(self):
        self.ws.crate(
            "k",
            {
                "src/lib.rs": "mod a;\nmod b;\nmod c;\n",
                "src/a.rs": "fn f() { let q = '\"'; let _ = crate::b::B; let r = '\"'; }\nfn g() { 0..crate::c::N; }\n",
                "src/c.rs": "pub const N: u8 = 1;\n",
                "src/b.rs": "pub struct B;\n",
            },
        )
        self.assertEqual(set(edges(self.ws.analyse())), {("k/src/a.rs", "k/src/b.rs"), ("k/src/a.rs", "k/src/c.rs")})

    def test_test_files_and_cfg_test_blocks_are_exempt_as_sources(self):
        self.ws.crate(
            "k",
            {
                "src/lib.rs": "pub mod m;\n",
                "src/m/mod.rs": (
                    "mod child;\npub use child::C;\npub fn helper() {}\n"
                    "#[cfg(test)]\nmod tests;\n"
                    "#[cfg(test)]\nmod testutil;\n"
                ),
                "src/m/tests.rs": "use super::*;\nuse super::child::C;\n",
                "src/m/testutil.rs": "use crate::m::helper;\n",
                "src/m/child.rs": (
                    "pub struct C;\n"
                    "#[cfg(test)]\n"
                    "mod tests {\n"
                    "    use super::*;\n"
                    "    use crate::m::helper;\n"
                    "}\n"
                    "#[cfg(all(test, unix))]\n"
                    "fn t() { super::helper() }\n"
                ),
            },
        )
        res = self.ws.analyse()
        self.assertEqual(cycles(res), [])
        self.assertEqual(set(edges(res)), {("k/src/m/mod.rs", "k/src/m/child.rs")})

    def test_cfg_not_test_is_not_exempt(self):
        self.ws.crate(
            "k",
            {
                "src/lib.rs": "mod a;\nmod b;\n",
                "src/a.rs": "#[cfg(not(test))]\nuse crate::b::B;\n",
                "src/b.rs": "pub struct B;\n",
            },
        )
        self.assertEqual(set(edges(self.ws.analyse())), {("k/src/a.rs", "k/src/b.rs")})

    def test_glob_of_parent_and_siblings_through_it(self):
        self.ws.crate(
            "k",
            {
                "src/lib.rs": "mod a;\nmod b;\nmod c;\n",
                "src/a.rs": "use super::*;\nfn f() { b::g() }\n",
                "src/b.rs": "pub fn g() {}\n",
                "src/c.rs": "pub fn h() {}\n",
            },
        )
        e = edges(self.ws.analyse())
        self.assertEqual(e[("k/src/a.rs", "k/src/lib.rs")], [1])
        self.assertEqual(e[("k/src/a.rs", "k/src/b.rs")], [2])

    def test_bin_root_has_its_own_modules(self):
        self.ws.crate(
            "k",
            {
                "src/lib.rs": "pub mod util;\n",
                "src/util.rs": "pub fn u() {}\n",
                "src/main.rs": "mod cli;\nmod util2;\nuse k::util::u;\nfn main() { cli::run() }\n",
                "src/cli/mod.rs": "use crate::util2::U;\npub fn run() {}\n",
                "src/util2.rs": "pub struct U;\nfn f() { crate::cli::run() }\n",
            },
        )
        res = self.ws.analyse()
        self.assertEqual(cycles(res), [["k/src/cli/mod.rs", "k/src/util2.rs"]])
        e = edges(res)
        self.assertIn(("k/src/main.rs", "k/src/cli/mod.rs"), e)  # `cli::run()` in main
        self.assertNotIn(("k/src/main.rs", "k/src/util.rs"), e)  # through the crate's name

    def test_path_attribute(self):
        self.ws.crate(
            "k",
            {
                "src/lib.rs": '#[path = "odd/name.rs"]\nmod x;\nmod y;\n',
                "src/odd/name.rs": "pub struct X;\nfn f() -> crate::y::Y { todo!() }\n",
                "src/y.rs": "pub struct Y;\nuse crate::x::X;\n",
            },
        )
        self.assertEqual(cycles(self.ws.analyse()), [["k/src/odd/name.rs", "k/src/y.rs"]])

    def test_inline_module_paths_resolve_inside_it(self):
        self.ws.crate(
            "k",
            {
                "src/lib.rs": "mod a;\nmod b;\n",
                # super:: in the inline module is a.rs itself; super::super:: is the root
                "src/a.rs": "mod inner {\n    use super::A;\n    use super::super::b::B;\n}\npub struct A;\n",
                "src/b.rs": "pub struct B;\n",
            },
        )
        self.assertEqual(edges(self.ws.analyse()), {("k/src/a.rs", "k/src/b.rs"): [3]})

    def test_dot_output(self):
        self.ws.crate(
            "k",
            {
                "src/lib.rs": "mod a;\nmod b;\n",
                "src/a.rs": "use crate::b::B;\npub struct A;\n",
                "src/b.rs": "use crate::a::A;\npub struct B;\n",
            },
        )
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cl.main(["--root", self.ws.root, "--dot"])
        self.assertEqual(code, 1)
        self.assertTrue(out.getvalue().startswith("digraph"))
        self.assertIn('"k/src/a.rs" -> "k/src/b.rs" [color=red];', out.getvalue())
        self.assertIn("1 cycles", err.getvalue())

    def test_quiet(self):
        self.ws.crate("k", {"src/lib.rs": "pub struct A;\n"})
        self.assertEqual(self.ws.run("--quiet"), (0, ""))


class Flow(Base):
    def client(self, flow_files, extra=None):
        """The pure crate: its flows and its screens (the io module of `extra` is the
        kind of file the crate must not have: checked like every other file)."""
        files = {
            "src/lib.rs": "pub mod flow;\npub mod screen;\n",
            "src/screen.rs": "pub mod tree;\npub struct Screen;\npub use tree::{NodeRef, Tree};\n",
            "src/screen/tree.rs": "pub struct Tree;\npub struct NodeRef;\n",
        }
        files.update(flow_files)
        files.update(extra or {})
        self.ws.crate("pdd", files)
        return self.ws.analyse()

    def test_sleep_and_clock_reads_are_flagged(self):
        res = self.client(
            {
                "src/flow/mod.rs": "pub mod a;\npub mod b;\n",
                "src/flow/a.rs": (
                    "use std::time::Duration;\n"
                    "fn f(d: Duration) {\n"
                    "    std::thread::sleep(d);\n"
                    "    let now = chrono::Utc::now();\n"
                    "}\n"
                ),
                "src/flow/b.rs": (
                    "use chrono::Utc;\n"
                    "use std::thread;\n"
                    "fn g(c: &C) {\n"
                    "    let t = Utc::now();\n"
                    "    thread::sleep(D);\n"
                    "    c.sleep(D);\n"
                    "    let i = std::time::Instant::now();\n"
                    "}\n"
                ),
            }
        )
        found = {(p, ln): rules for p, ln, rules in flow(res)}
        self.assertEqual(
            found,
            {
                ("pdd/src/flow/a.rs", 3): ["std::thread", "thread::sleep"],
                ("pdd/src/flow/a.rs", 4): ["Utc::now"],
                ("pdd/src/flow/b.rs", 2): ["std::thread"],
                ("pdd/src/flow/b.rs", 4): ["Utc::now"],
                ("pdd/src/flow/b.rs", 5): ["thread::sleep"],  # std::thread: at its `use`
                ("pdd/src/flow/b.rs", 6): [".sleep("],
                ("pdd/src/flow/b.rs", 7): ["std::time::Instant", "Instant::now"],
            },
        )
        code, out = self.ws.run()
        self.assertEqual(code, 1)
        self.assertIn("pdd/src/flow/a.rs:3: std::thread::sleep(d);  [pure-crate I/O: std::thread, thread::sleep]", out)
        self.assertIn("7 pure-crate I/O references", out)

    def test_flows_read_screens_not_the_raw_tree(self):
        res = self.client(
            {
                "src/flow/mod.rs": "pub mod a;\npub mod sub;\n",
                "src/flow/a.rs": (
                    "use crate::screen::{Screen, Tree};\n"
                    "use crate::{\n    screen::tree::NodeRef,\n};\n"
                    "fn f(s: crate::screen::Screen) {}\n"
                ),
                "src/flow/sub/mod.rs": "fn g() -> super::super::screen::Tree { todo!() }\nuse tokio::sync::Mutex;\n",
            }
        )
        found = {(p, ln): rules for p, ln, rules in flow(res)}
        self.assertEqual(
            found,
            {
                ("pdd/src/flow/a.rs", 1): ["crate::screen::Tree"],
                ("pdd/src/flow/a.rs", 3): ["crate::screen::tree"],
                ("pdd/src/flow/sub/mod.rs", 1): ["crate::screen::Tree"],
                ("pdd/src/flow/sub/mod.rs", 2): ["tokio"],
            },
        )

    def test_the_whole_pure_crate_is_checked_for_io_the_tree_rule_only_in_flows(self):
        res = self.client(
            {"src/flow/mod.rs": "pub fn pure() {}\n"},
            {
                "src/lib.rs": "pub mod flow;\npub mod screen;\npub mod io;\n",
                "src/io.rs": "fn f() { std::thread::sleep(D) }\n",
                "src/screen.rs": "pub mod tree;\nfn g(t: crate::screen::tree::Tree) {}\n",
            },
        )
        self.assertEqual(
            [(p, ln) for p, ln, _ in flow(res)],
            [("pdd/src/io.rs", 1)],
        )

    def test_test_code_in_flow_is_not_flagged(self):
        res = self.client(
            {
                "src/flow/mod.rs": "pub mod a;\n#[cfg(test)]\nmod tests;\n",
                "src/flow/tests.rs": "use super::*;\nfn t() { std::thread::sleep(D); crate::store::Store; }\n",
                "src/flow/a.rs": (
                    "pub fn pure() {}\n"
                    "#[cfg(test)]\n"
                    "mod tests {\n"
                    "    use super::*;\n"
                    "    #[tokio::test]\n"
                    "    async fn t() { let _ = chrono::Utc::now(); }\n"
                    "}\n"
                ),
            }
        )
        self.assertEqual(flow(res), [])
        self.assertEqual(cycles(res), [])

    def test_outside_the_pure_crate_is_not_checked(self):
        self.client({"src/flow/mod.rs": "pub fn pure() {}\n"})
        self.ws.crate("client", {"src/lib.rs": "pub mod io;\n", "src/io.rs": "fn f() { std::thread::sleep(D) }\n"})
        self.assertEqual(flow(self.ws.analyse()), [])


ZONED_DOC = """# Architecture

```crates
client -> base
base   ->
```

```zones
top    cli/                ── the commands
low    store/ util.rs      ── the bottom
```
"""


class Zones(Base):
    def zoned(self, files, doc=ZONED_DOC, client_cargo=""):
        self.ws.crate("client", files, client_cargo or '\n[dependencies]\ncmautobuy-base = { path = "../base" }\n')
        self.ws.crate("base", {"src/lib.rs": "pub fn b() {}\n"})
        with open(os.path.join(self.ws.root, "ARCHITECTURE.md"), "w") as f:
            f.write(doc)

    def test_a_zone_that_imports_the_zone_above_it_is_a_break(self):
        self.zoned(
            {
                "src/lib.rs": "pub mod cli;\npub mod store;\npub mod util;\n",
                "src/cli/mod.rs": "pub fn run() {}\n",
                "src/store/mod.rs": "pub struct S;\npub fn f() { crate::cli::run() }\n",
                "src/util.rs": "pub fn u() {}\n",
            }
        )
        code, out = self.ws.run()
        self.assertEqual(code, 1, out)
        self.assertIn("client/src/store/mod.rs:2: zone low uses zone top above it (client/src/cli/mod.rs)", out)
        self.assertIn("1 zone breaks", out)

    def test_downward_imports_hold_and_every_file_needs_a_zone(self):
        self.zoned(
            {
                "src/lib.rs": "pub mod cli;\npub mod store;\npub mod util;\npub mod stray;\n",
                "src/cli/mod.rs": "use crate::store::S;\npub fn run(_: S) { crate::util::u() }\n",
                "src/store/mod.rs": "pub struct S;\n",
                "src/util.rs": "pub fn u() {}\n",
                "src/stray.rs": "pub fn s() {}\n",
            }
        )
        code, out = self.ws.run()
        self.assertEqual(code, 1, out)
        self.assertIn("ARCHITECTURE.md: client/src/stray.rs is in no zone", out)
        self.assertNotIn("uses zone", out)

    def test_the_crates_block_must_match_cargo(self):
        self.zoned(
            {"src/lib.rs": "pub mod util;\n", "src/util.rs": "pub fn u() {}\n", "src/store/mod.rs": ""},
            client_cargo="\n",
        )
        code, out = self.ws.run()
        self.assertEqual(code, 1, out)
        self.assertIn("crate client depends on none in its Cargo.toml, the ```crates block says ['base']", out)

    def test_an_entry_naming_nothing_is_a_break(self):
        doc = ZONED_DOC.replace("store/ util.rs", "store/ util.rs gone.rs")
        self.zoned({"src/lib.rs": "pub mod util;\n", "src/util.rs": "", "src/store/mod.rs": ""}, doc=doc)
        code, out = self.ws.run()
        self.assertEqual(code, 1, out)
        self.assertIn("zone low names client/src/gone.rs, which does not exist", out)


class RealTree(unittest.TestCase):
    def test_runs_on_the_repository(self):
        if not os.path.isfile(os.path.join(REPO, "Cargo.toml")):
            self.skipTest("not in the workspace")
        start = time.monotonic()
        p = subprocess.run([sys.executable, SCRIPT, "--root", REPO], capture_output=True, text=True)
        elapsed = time.monotonic() - start
        self.assertIn(p.returncode, (0, 1), p.stderr)
        self.assertRegex(
            p.stdout.strip().splitlines()[-1],
            r"^check-layers: \d+ crates, \d+ files, \d+ edges, \d+ cycles, (\d+ pure-crate I/O references|no \S+)(, \d+ zone breaks)?$",
        )
        self.assertLess(elapsed, 10)  # ~1 s of CPU; generous for a loaded machine


if __name__ == "__main__":
    unittest.main()
