//! The inventory of an image build, as Ansible's in-memory inventory keeps it: the image is
//! its one host until `add_host` names others; `group_by` and `add_host` put hosts in groups
//! and report whether they changed it. The `groups` and `group_names` variables are read from
//! it, so tasks after them see what they did.

use indexmap::IndexMap;
use serde_json::{json, Map, Value as Json};

/// The group every host is in.
const ALL: &str = "all";
/// The group of hosts in no other group.
const UNGROUPED: &str = "ungrouped";

/// A group other than `all` and `ungrouped`.
#[derive(Debug, Clone, Default, PartialEq)]
struct Group {
    /// Hosts put in it directly.
    hosts: Vec<String>,
    /// The groups it is a child of (`all` when linked to it).
    parents: Vec<String>,
}

/// What the plan knows of the inventory.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum PlanInventory {
    /// No `group_by` or `add_host` yet: the image alone.
    #[default]
    Untouched,
    /// As the tasks so far left it.
    Known(Inventory),
    /// Known once the build runs (a task before changed it under a condition only the build
    /// decides).
    AtBuild,
}

/// Hosts and groups.
#[derive(Debug, Clone, PartialEq)]
pub struct Inventory {
    /// Every host, in the order added (the image first).
    hosts: Vec<String>,
    /// Variables `add_host` gave each host.
    host_vars: IndexMap<String, Map<String, Json>>,
    /// The groups, in the order created.
    groups: IndexMap<String, Group>,
}

impl Inventory {
    /// The inventory of a build of `image`: one host, in `all` and `ungrouped`.
    pub fn new(image: &str) -> Self {
        Self {
            hosts: vec![image.to_owned()],
            host_vars: IndexMap::new(),
            groups: IndexMap::new(),
        }
    }

    /// `group_by` for `host`: the group `key` (spaces read as dashes, as Ansible's action
    /// does), a child of each of `parents`, holds the host. Whether that changed anything.
    pub fn group_by(&mut self, host: &str, key: &str, parents: &[String]) -> bool {
        let name = key.replace(' ', "-");
        self.groups.entry(name.clone()).or_default();
        let mut changed = false;
        for parent in parents.iter().map(|p| p.replace(' ', "-")) {
            if parent != ALL && !self.groups.contains_key(&parent) {
                self.groups.insert(parent.clone(), Group::default());
                changed = true;
            }
            let group = self.groups.entry(name.clone()).or_default();
            if parent != name && !group.parents.contains(&parent) {
                group.parents.push(parent);
                changed = true;
            }
        }
        if !self.hosts_of(&name).iter().any(|h| h == host) {
            self.groups
                .entry(name)
                .or_default()
                .hosts
                .push(host.to_owned());
            changed = true;
        }
        self.reconcile();
        changed
    }

    /// `add_host`: `host` in the inventory, with `vars` over its own and in each of `groups`.
    /// Whether that changed anything.
    pub fn add_host(&mut self, host: &str, groups: &[String], vars: &Map<String, Json>) -> bool {
        let mut changed = false;
        if !self.hosts.iter().any(|h| h == host) {
            self.hosts.push(host.to_owned());
            changed = true;
        }
        let own = self.host_vars.entry(host.to_owned()).or_default();
        for (key, value) in vars {
            if own.get(key) != Some(value) {
                own.insert(key.clone(), value.clone());
                changed = true;
            }
        }
        for name in groups {
            let group = self.groups.entry(name.clone()).or_insert_with(|| {
                changed = true;
                Group::default()
            });
            if !group.hosts.iter().any(|h| h == host) {
                group.hosts.push(host.to_owned());
                changed = true;
            }
        }
        self.reconcile();
        changed
    }

    /// Ansible's rule after a change: a group with no parent is a child of `all`.
    fn reconcile(&mut self) {
        for group in self.groups.values_mut() {
            if group.parents.is_empty() {
                group.parents.push(ALL.to_owned());
            }
        }
    }

    /// `name` and every group below it.
    fn descendants(&self, name: &str) -> Vec<String> {
        let mut found = vec![name.to_owned()];
        let mut index = 0;
        while index < found.len() {
            let parent = found[index].clone();
            for (child, group) in &self.groups {
                if group.parents.contains(&parent) && !found.contains(child) {
                    found.push(child.clone());
                }
            }
            index += 1;
        }
        found
    }

    /// The hosts of a group: its own and those of the groups below it.
    fn hosts_of(&self, name: &str) -> Vec<String> {
        if name == ALL {
            return self.hosts.clone();
        }
        if name == UNGROUPED {
            return self
                .hosts
                .iter()
                .filter(|h| self.groups.values().all(|g| !g.hosts.contains(h)))
                .cloned()
                .collect();
        }
        let mut hosts: Vec<String> = Vec::new();
        for group in self.descendants(name) {
            for host in self.groups.get(&group).map_or(&[][..], |g| &g.hosts) {
                if !hosts.contains(host) {
                    hosts.push(host.clone());
                }
            }
        }
        hosts
    }

    /// The `groups` variable: each group's hosts, `all` and `ungrouped` first.
    pub fn groups_var(&self) -> Json {
        let mut map = Map::new();
        for name in [ALL, UNGROUPED]
            .into_iter()
            .map(str::to_owned)
            .chain(self.groups.keys().cloned())
        {
            let hosts = self.hosts_of(&name);
            map.insert(name, json!(hosts));
        }
        Json::Object(map)
    }

    /// The `group_names` variable of `host`: the groups it is in, sorted, without `all` and
    /// `ungrouped`.
    pub fn group_names(&self, host: &str) -> Json {
        let mut names: Vec<&String> = self
            .groups
            .keys()
            .filter(|name| self.hosts_of(name).iter().any(|h| h == host))
            .collect();
        names.sort();
        json!(names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_by_changes_once_and_groups_follow() {
        let mut inv = Inventory::new("img");
        assert_eq!(
            inv.groups_var(),
            json!({"all": ["img"], "ungrouped": ["img"]})
        );
        assert!(inv.group_by("img", "cw test1_img", &["all".into()]));
        assert!(!inv.group_by("img", "cw test1_img", &["all".into()]));
        assert!(inv.group_by("img", "kid", &["par1".into(), "par2".into()]));
        assert_eq!(
            inv.groups_var(),
            json!({"all": ["img"], "ungrouped": [], "cw-test1_img": ["img"], "kid": ["img"],
                   "par1": ["img"], "par2": ["img"]})
        );
        assert_eq!(
            inv.group_names("img"),
            json!(["cw-test1_img", "kid", "par1", "par2"])
        );
        // Already in par1 through kid: nothing changes.
        assert!(!inv.group_by("img", "par1", &["all".into()]));
    }

    #[test]
    fn add_host_changes_when_the_host_its_vars_or_groups_are_new() {
        let mut inv = Inventory::new("img");
        let vars = Map::from_iter([("foo".to_owned(), json!("bar"))]);
        assert!(inv.add_host("host_1", &["x".into()], &vars));
        assert!(!inv.add_host("host_1", &["x".into()], &vars));
        assert!(inv.add_host("host_1", &["y".into()], &vars));
        assert!(inv.add_host("host_2", &[], &Map::new()));
        let groups = inv.groups_var();
        assert_eq!(groups["all"], json!(["img", "host_1", "host_2"]));
        assert_eq!(groups["ungrouped"], json!(["img", "host_2"]));
        assert_eq!(groups["y"], json!(["host_1"]));
        assert_eq!(inv.group_names("img"), json!([]));
    }
}
