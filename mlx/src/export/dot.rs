//! Graphviz DOT output of a lazy graph.

use crate::array::Node;
use crate::{Array, Error, Result};
use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

/// Writes the graph that computes `outputs` as a DOT digraph: one box per
/// primitive (with its state), one ellipse per leaf (input or constant).
pub fn export_to_dot(w: &mut impl Write, outputs: &[Array]) -> Result<()> {
    let io = |e: std::io::Error| Error::io("<dot output>", e);
    let mut lines = vec!["digraph mlx {".to_string(), "  rankdir=LR;".to_string()];
    let mut node_ids: HashMap<*const Node, usize> = HashMap::new();
    let mut leaf_ids: HashMap<usize, usize> = HashMap::new();
    let mut next = 0usize;
    let mut stack: Vec<Arc<Node>> = outputs
        .iter()
        .filter_map(|a| a.node().map(|(n, _)| n))
        .collect();
    let mut leaf = |a: &Array, lines: &mut Vec<String>| -> usize {
        *leaf_ids.entry(a.id()).or_insert_with(|| {
            next += 1;
            let kind = if a.is_placeholder() {
                "input"
            } else {
                "constant"
            };
            lines.push(format!(
                "  v{next} [shape=ellipse,label=\"{kind}\\n{} {:?}\"];",
                a.dtype(),
                a.shape()
            ));
            next
        })
    };
    let mut edges = Vec::new();
    let mut count = 0usize;
    while let Some(n) = stack.pop() {
        let key = Arc::as_ptr(&n);
        if node_ids.contains_key(&key) {
            continue;
        }
        count += 1;
        let id = 1_000_000 + count;
        node_ids.insert(key, id);
        let state: Vec<String> = n
            .primitive()
            .state_names()
            .iter()
            .zip(n.primitive().state())
            .map(|(k, v)| format!("{k}={v}").replace('"', "'"))
            .collect();
        let out: Vec<String> = n
            .specs()
            .iter()
            .map(|s| format!("{} {:?}", s.dtype, s.shape))
            .collect();
        lines.push(format!(
            "  v{id} [shape=box,label=\"{}\\n{}\\n-> {}\"];",
            n.primitive().name(),
            state.join(", "),
            out.join("; ")
        ));
        for a in n.inputs() {
            match a.node() {
                Some((m, _)) => {
                    edges.push((Arc::as_ptr(&m), id));
                    stack.push(m);
                }
                None => {
                    let l = leaf(&a, &mut lines);
                    lines.push(format!("  v{l} -> v{id};"));
                }
            }
        }
    }
    for (from, to) in edges {
        lines.push(format!("  v{} -> v{to};", node_ids[&from]));
    }
    lines.push("}".to_string());
    writeln!(w, "{}", lines.join("\n")).map_err(io)
}
