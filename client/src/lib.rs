//! placeholder: filled by issues 4-7
