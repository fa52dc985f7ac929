//! What a capture or a replay says, for people (text tables, HTML) and for machines (JSON).

pub mod cat;
pub mod inspect;
pub mod pair;
pub mod summary;
pub mod table;
