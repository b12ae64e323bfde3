//! Who the phone says it is: the product names the ADB banner and `getprop` report.

pub const MODEL: &str = "SimPhone_PDD";
pub const PRODUCT: &str = "simphone_pdd";
pub const DEVICE: &str = "simphone";
