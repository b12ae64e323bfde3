//! `date [+FORMAT]`: the phone's clock in its own UTC offset.

use std::fmt::Write as _;

use crate::device::exec::QUICK_MS;
use crate::device::{Device, Exec};

pub(crate) fn run(d: &mut Device, args: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    let now = d.now();
    let fmt = args
        .iter()
        .find_map(|a| a.strip_prefix('+'))
        .unwrap_or("%a %b %e %H:%M:%S %Z %Y");
    let mut s = String::new();
    if write!(s, "{}", now.format(fmt)).is_err() {
        e.stderr = b"date: bad format\n".to_vec();
        e.code = 1;
    } else {
        e.stdout = format!("{s}\n").into_bytes();
    }
    QUICK_MS
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};

    use crate::{Catalog, SimConfig};

    fn date_s(offset: i64) -> i64 {
        let mut c = SimConfig::new(Catalog::load(&Catalog::bundled_dir()).unwrap());
        c.start_time = Some(Utc.with_ymd_and_hms(2026, 11, 30, 8, 0, 0).unwrap());
        c.clock_offset_secs = offset;
        let mut d = c.build_device().unwrap();
        let e = d.run_line("date +%s");
        assert_eq!(e.code, 0);
        String::from_utf8(e.stdout).unwrap().trim().parse().unwrap()
    }

    #[test]
    fn an_unsynced_phone_prints_its_own_time() {
        let synced = date_s(0);
        assert!((1_796_025_600..1_796_025_610).contains(&synced), "{synced}");
        assert_eq!(date_s(-150) - synced, -150);
        assert_eq!(date_s(90) - synced, 90);
    }
}
