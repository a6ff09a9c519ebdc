//! Test support shared by the integration tests and the benchmark (which includes it
//! with `#[path]`): the corpus generator, adversarial snippets, the HTML5 oracle and
//! the real-page corpus.

pub mod corpus;
pub mod oracle;
pub mod real;
pub mod snippets;
