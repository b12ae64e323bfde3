//! placeholder: filled by issue 3
