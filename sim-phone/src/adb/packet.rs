//! ADB packet framing: the command words, protocol limits, and encoding a packet with its
//! 24-byte little-endian header (command, arg0, arg1, length, checksum, magic).

pub(crate) const A_SYNC: u32 = 0x434e_5953;
pub(crate) const A_CNXN: u32 = 0x4e58_4e43;
pub(crate) const A_OPEN: u32 = 0x4e45_504f;
pub(crate) const A_OKAY: u32 = 0x5941_4b4f;
pub(crate) const A_CLSE: u32 = 0x4553_4c43;
pub(crate) const A_WRTE: u32 = 0x4554_5257;
pub(crate) const A_AUTH: u32 = 0x4854_5541;
pub(crate) const A_STLS: u32 = 0x534c_5453;

pub(crate) const VERSION_MIN: u32 = 0x0100_0000;
pub(crate) const VERSION_SKIP_CHECKSUM: u32 = 0x0100_0001;
/// Largest payload we accept or send (the protocol's 1 MiB maximum).
pub(crate) const MAX_PAYLOAD: u32 = 1024 * 1024;
/// Payload limit before CNXN has negotiated one.
pub(crate) const MAX_PAYLOAD_V1: u32 = 4096;

/// A packet to send.
pub(crate) struct Packet {
    pub(crate) cmd: u32,
    pub(crate) arg0: u32,
    pub(crate) arg1: u32,
    pub(crate) data: Vec<u8>,
}

pub(crate) fn checksum(data: &[u8]) -> u32 {
    data.iter().fold(0u32, |a, &b| a.wrapping_add(u32::from(b)))
}

pub(crate) fn encode(p: &Packet, version: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(24 + p.data.len());
    let check = if version >= VERSION_SKIP_CHECKSUM {
        0
    } else {
        checksum(&p.data)
    };
    for v in [
        p.cmd,
        p.arg0,
        p.arg1,
        p.data.len() as u32,
        check,
        p.cmd ^ 0xffff_ffff,
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&p.data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_only_for_old_version() {
        let p = Packet {
            cmd: A_WRTE,
            arg0: 1,
            arg1: 2,
            data: vec![1, 2, 3],
        };
        let old = encode(&p, VERSION_MIN);
        let new = encode(&p, VERSION_SKIP_CHECKSUM);
        assert_eq!(&old[16..20], &6u32.to_le_bytes());
        assert_eq!(&new[16..20], &0u32.to_le_bytes());
        assert_eq!(&old[20..24], &(A_WRTE ^ 0xffff_ffff).to_le_bytes());
    }
}
