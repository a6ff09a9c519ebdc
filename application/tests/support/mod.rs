//! Test support shared by the integration tests and the benchmark (which includes it
//! with `#[path]`): the corpus generator, adversarial snippets and the HTML5 oracle.

pub mod corpus;
pub mod oracle;
pub mod snippets;
