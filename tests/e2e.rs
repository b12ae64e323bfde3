//! End-to-end tests across the crates. They grow with the client (issues 6 and 7).
