//! `region-group`: being built; see the workspace README for what it will provide.
