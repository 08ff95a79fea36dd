//! `herdr --machine NAME events`: a machine's events as they happen, over a connection of
//! this command's own (`host`, the roaming rules: a link that drops is made again, and
//! the gap is said on stderr; what happened during it is not replayed).

use serde_json::{json, Value};

use super::host::{write_line, After, Host, Role, SharedOut};
use super::Error;

/// Hands each event to `print` until it says to stop (its output is gone).
pub fn run(name: &str, print: impl FnMut(&Value) -> bool) -> Result<i32, Error> {
    let machine = crate::machine::load()?.get(name)?.clone();
    let mut host: Host<()> = Host::new(
        machine,
        // (One log per machine, not per run: started again past 1 MiB, never left behind.)
        &format!("ssh-events-{name}.log"),
    )?;
    host.run(&mut Printer {
        name: name.to_string(),
        print,
        down: false,
    })
}

struct Printer<P> {
    name: String,
    print: P,
    /// The machine was said to be unreachable (once per outage).
    down: bool,
}

impl<P: FnMut(&Value) -> bool> Role for Printer<P> {
    type Cmd = ();

    fn connecting(&mut self) {}

    fn connected(&mut self, out: &SharedOut, _version: String) {
        if std::mem::take(&mut self.down) {
            eprintln!("herdr: {} is back; events from now on", self.name);
        }
        write_line(out, &json!({ "id": "s", "method": "events.subscribe" }));
    }

    fn down(&mut self, why: &str) {
        if !self.down {
            self.down = true;
            eprintln!("herdr: {} is unreachable ({why}); reconnecting", self.name);
        }
    }

    fn command(&mut self, _out: Option<&SharedOut>, _cmd: ()) -> After {
        After::Nothing
    }

    fn line(&mut self, _out: &SharedOut, msg: Value) {
        if msg.get("event").is_some() && !(self.print)(&msg) {
            std::process::exit(0);
        }
    }
}
