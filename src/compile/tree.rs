//! Multi-layer routing (Traefik 3.6): routers with `parentRefs` hang below
//! other routers. A router without `parentRefs` is a root and sits in its
//! entry points' tables; a child is tried only for requests its parent
//! matched, after the parent's middlewares ran. This step reads the tree
//! out of the routers' `parentRefs` and finds what is wrong with it, as
//! Traefik's router manager does: a missing parent, a child with options
//! only a root has, a router no root leads to, a cycle (its last link is
//! left out, with a warning), a router with neither a service nor
//! children, and one with both.

use crate::config::QualifiedName;
use crate::config::dynamic::Router;
use crate::config::problem::{Problem, Reference};
use std::collections::{BTreeMap, BTreeSet};

/// One thing wrong with one router of the tree.
#[derive(Debug)]
pub(super) struct Finding {
    /// What is wrong.
    pub problem: Problem,
    /// The router's option it is about.
    pub at: &'static str,
    /// Whether it disables the router (else it is a warning).
    pub disables: bool,
}

/// The routers' tree.
#[derive(Debug, Default)]
pub(super) struct Tree {
    /// Each parent's children, qualified, in name order, without the
    /// links that close a cycle.
    pub children: BTreeMap<String, Vec<String>>,
    /// Every router once: those reachable from a root with each child
    /// before its parents (so a parent is compiled after its children),
    /// then the others.
    pub order: Vec<String>,
    /// What is wrong, per router.
    pub findings: BTreeMap<String, Vec<Finding>>,
}

impl Tree {
    /// Whether `name` is the parent of at least one router.
    pub fn is_parent(&self, name: &str) -> bool {
        self.children.get(name).is_some_and(|c| !c.is_empty())
    }

    fn find(&mut self, router: &str, problem: Problem, at: &'static str, disables: bool) {
        self.findings
            .entry(router.to_owned())
            .or_default()
            .push(Finding {
                problem,
                at,
                disables,
            });
    }
}

/// Reads the tree of `routers` (keys qualified `name@provider`).
pub(super) fn plan(routers: &BTreeMap<String, Router>) -> Tree {
    let mut tree = Tree::default();
    let mut roots = Vec::new();
    for (name, router) in routers {
        if router.parent_refs.is_empty() {
            roots.push(name.as_str());
            continue;
        }
        let provider = QualifiedName::parse(name)
            .map(|q| q.provider)
            .unwrap_or_default();
        for written in &router.parent_refs {
            let parent = QualifiedName::resolve(written, &provider).to_string();
            if routers.contains_key(&parent) {
                let children = tree.children.entry(parent).or_default();
                if !children.contains(name) {
                    children.push(name.clone());
                }
            } else {
                tree.find(
                    name,
                    Problem::Missing {
                        what: Reference::ParentRouter,
                        name: parent,
                    },
                    "parentrefs",
                    true,
                );
            }
        }
        let root_only = [
            (router.tls.is_some(), "tls"),
            (router.observability.is_some(), "observability"),
            (!router.entry_points.is_empty(), "entryPoints"),
        ];
        for (_, option) in root_only.into_iter().filter(|(set, _)| *set) {
            tree.find(
                name,
                Problem::NotAtRoot { option },
                if option == "entryPoints" {
                    "entrypoints"
                } else {
                    option
                },
                true,
            );
        }
    }
    for children in tree.children.values_mut() {
        children.sort();
    }

    let mut walk = Walk {
        visited: BTreeSet::new(),
        path: Vec::new(),
        order: Vec::new(),
    };
    for root in roots {
        walk.visit(root, &mut tree);
    }
    let Walk { visited, order, .. } = walk;
    tree.order = order;

    for (name, router) in routers {
        if !visited.contains(name.as_str()) {
            tree.find(name, Problem::Unreachable, "parentrefs", true);
            tree.order.push(name.clone());
            continue;
        }
        let children = tree.children.get(name).cloned().unwrap_or_default();
        match (router.service.is_empty(), children.is_empty()) {
            // A root without a service is told so by the router step, as
            // before multi-layer routing existed.
            (true, true) if !router.parent_refs.is_empty() => {
                tree.find(name, Problem::NoServiceNorChildren, "service", true);
            }
            (false, false) => {
                tree.find(
                    name,
                    Problem::ServiceAndChildren { children },
                    "service",
                    true,
                );
            }
            _ => {}
        }
    }
    tree
}

/// A depth-first walk from the roots.
struct Walk {
    visited: BTreeSet<String>,
    /// The routers from the root to the one being visited.
    path: Vec<String>,
    /// Routers in post-order: children before their parents.
    order: Vec<String>,
}

impl Walk {
    fn visit(&mut self, name: &str, tree: &mut Tree) {
        if let Some(start) = self.path.iter().position(|p| p == name) {
            // The link from the last router on the path back to `name`
            // closes the cycle: it is the one left out, as in Traefik.
            let mut cycle = self.path[start..].to_vec();
            cycle.push(name.to_owned());
            if let Some(guilty) = self.path.last().cloned() {
                if let Some(children) = tree.children.get_mut(&guilty) {
                    children.retain(|c| c != name);
                }
                tree.find(
                    &guilty,
                    Problem::RouterCycle { path: cycle },
                    "parentrefs",
                    false,
                );
            }
            return;
        }
        if !self.visited.insert(name.to_owned()) {
            return;
        }
        self.path.push(name.to_owned());
        let children = tree.children.get(name).cloned().unwrap_or_default();
        for child in children {
            self.visit(&child, tree);
        }
        self.path.pop();
        self.order.push(name.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router(service: &str, parents: &[&str]) -> Router {
        Router {
            rule: "PathPrefix(`/`)".to_owned(),
            service: service.to_owned(),
            parent_refs: parents.iter().map(|p| (*p).to_owned()).collect(),
            ..Router::default()
        }
    }

    fn problems(tree: &Tree, name: &str) -> Vec<String> {
        tree.findings
            .get(name)
            .map(|f| f.iter().map(|f| f.problem.to_string()).collect())
            .unwrap_or_default()
    }

    #[test]
    fn children_come_before_their_parents_and_names_resolve_in_the_childs_provider() {
        let routers = BTreeMap::from([
            ("api@file".to_owned(), router("", &[])),
            ("admin@file".to_owned(), router("a", &["api"])),
            ("users@file".to_owned(), router("", &["api@file"])),
            ("deep@file".to_owned(), router("d", &["users"])),
        ]);
        let tree = plan(&routers);
        assert!(tree.findings.is_empty(), "{:?}", tree.findings);
        assert_eq!(tree.children["api@file"], ["admin@file", "users@file"]);
        let at = |n: &str| tree.order.iter().position(|o| o == n).unwrap();
        assert!(at("deep@file") < at("users@file"));
        assert!(at("users@file") < at("api@file"));
        assert!(at("admin@file") < at("api@file"));
        assert_eq!(tree.order.len(), 4);
    }

    #[test]
    fn a_missing_parent_disables_the_child() {
        let routers = BTreeMap::from([("orphan@file".to_owned(), router("s", &["nope"]))]);
        let tree = plan(&routers);
        assert_eq!(
            problems(&tree, "orphan@file"),
            [
                "parent router `nope@file` does not exist",
                "the router is not reachable: no chain of `parentRefs` leads to a router without them"
            ]
        );
        assert!(tree.findings["orphan@file"].iter().all(|f| f.disables));
    }

    #[test]
    fn a_cycle_loses_its_last_link_with_a_warning() {
        let routers = BTreeMap::from([
            ("root@file".to_owned(), router("", &[])),
            ("a@file".to_owned(), router("", &["root", "b"])),
            ("b@file".to_owned(), router("s", &["a"])),
        ]);
        let tree = plan(&routers);
        assert_eq!(
            problems(&tree, "b@file"),
            [
                "cyclic reference in the router tree: a@file -> b@file -> a@file; the last link is ignored"
            ]
        );
        assert!(!tree.findings["b@file"][0].disables);
        assert!(!tree.is_parent("b@file"));
        assert!(!tree.findings.contains_key("a@file"));
    }

    #[test]
    fn a_cycle_no_root_leads_to_is_unreachable() {
        let routers = BTreeMap::from([
            ("a@file".to_owned(), router("", &["b"])),
            ("b@file".to_owned(), router("s", &["a"])),
        ]);
        let tree = plan(&routers);
        for name in ["a@file", "b@file"] {
            assert!(
                problems(&tree, name)
                    .iter()
                    .any(|p| p.contains("not reachable")),
                "{name}: {:?}",
                problems(&tree, name)
            );
        }
    }

    #[test]
    fn root_options_and_service_mistakes_are_found() {
        let mut child = router("s", &["p"]);
        child.entry_points = vec!["web".to_owned()];
        child.tls = Some(Default::default());
        let routers = BTreeMap::from([
            ("p@file".to_owned(), router("also", &[])),
            ("c@file".to_owned(), child),
            ("leafless@file".to_owned(), router("", &["p"])),
        ]);
        let tree = plan(&routers);
        assert_eq!(
            problems(&tree, "c@file"),
            [
                "a router with `parentRefs` cannot have `tls`: its root router's applies",
                "a router with `parentRefs` cannot have `entryPoints`: its root router's applies"
            ]
        );
        assert_eq!(
            problems(&tree, "p@file"),
            [
                "the router has a service and is the parent of `c@file` and `leafless@file`: a parent router has no service"
            ]
        );
        assert_eq!(
            problems(&tree, "leafless@file"),
            ["the router has no service and no child routers"]
        );
    }
}
