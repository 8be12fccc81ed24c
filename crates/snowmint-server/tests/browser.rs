//! The explorer page in real headless Chromium, driven through chromedriver
//! by fantoccini. One chromedriver per test binary; each test has its own
//! browser session and its own server on 127.0.0.1:0.
//!
//! Without `chromium`/`chromedriver` the tests skip with a reason, unless
//! `SNOWMINT_REQUIRE_SERVICES=1`, which makes a missing browser a failure.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;
use snowmint_server::{Config, IdentitySource, static_state};
use tokio::sync::oneshot;

#[path = "fixtures/sonyflake.rs"]
mod fixtures;

const CHROMIUM: &str = "/usr/bin/chromium";
const TIMESTAMP_SEGMENT: &str = "00000000000000000000000000000001111101000";
/// The names over the segments of the bit picture.
const BIT_LABELS: &str = "#bits .seg-label strong";
/// The labels of the compose form's fields.
const COMPOSE_LABELS: &str = "#compose-fields label";

/// The session `$start` makes, or the end of the test (skipped, with the
/// reason printed) where there is no browser.
macro_rules! session {
    ($start:expr) => {
        match $start.await {
            Some(s) => s,
            None => return,
        }
    };
}

/// Runs one browser at a time: two cores are shared with other work.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

struct Driver {
    port: u16,
    _child: Mutex<Child>,
}

fn find(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| Path::new(dir).join(program))
        .find(|p| p.is_file())
}

/// Clears the form field `el` and types `text` into it.
async fn retype(el: &fantoccini::elements::Element, text: &str) {
    el.clear().await.unwrap();
    el.send_keys(text).await.unwrap();
}

/// Starts chromedriver once per test binary. It runs under a small shell
/// that kills it and its browsers when this process's end of the pipe
/// closes (when the test binary exits), so nothing outlives the tests.
fn driver() -> Option<&'static Driver> {
    static DRIVER: OnceLock<Option<Driver>> = OnceLock::new();
    DRIVER
        .get_or_init(|| {
            let required = std::env::var("SNOWMINT_REQUIRE_SERVICES").as_deref() == Ok("1");
            let chromedriver = find("chromedriver");
            let missing = match (&chromedriver, Path::new(CHROMIUM).is_file()) {
                (None, _) => Some("chromedriver is not installed (Debian: chromium-driver)"),
                (_, false) => Some("/usr/bin/chromium is not installed (Debian: chromium)"),
                _ => None,
            };
            if let Some(reason) = missing {
                assert!(!required, "SNOWMINT_REQUIRE_SERVICES=1 but {reason}");
                eprintln!("skipping the browser tests: {reason}");
                return None;
            }
            // `--port=0`: chromedriver binds a port of its own choosing and
            // says which, so no other process can hold the port we talk to
            // (a port picked here and passed on is free only until then).
            // `setsid` gives the shell its own process group, so killing the
            // group at the end also ends browsers a failed test left open.
            let mut child = Command::new("setsid")
                .arg("sh")
                .arg("-c")
                .arg(r#""$1" --port=0 2>&1 & cat >/dev/null; kill -- -$$"#)
                .arg("sh")
                .arg(chromedriver.unwrap())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("start chromedriver");
            let stdout = child.stdout.take().unwrap();
            let mut lines = BufReader::new(stdout).lines();
            let mut output = Vec::new();
            let port = lines
                .by_ref()
                .map_while(Result::ok)
                .find_map(|line| {
                    // "ChromeDriver was started successfully on port 45041."
                    let port = line
                        .split_once("started successfully on port ")
                        .and_then(|(_, rest)| rest.trim_end_matches('.').trim().parse().ok());
                    output.push(line);
                    port
                })
                .unwrap_or_else(|| panic!("chromedriver did not start: {output:?}"));
            // Keep draining its output so it never blocks on a full pipe.
            std::thread::spawn(move || for _ in lines {});
            Some(Driver {
                port,
                _child: Mutex::new(child),
            })
        })
        .as_ref()
}

struct Session {
    /// One browser at a time ([`ONE_AT_A_TIME`]), until the session ends.
    _one: tokio::sync::MutexGuard<'static, ()>,
    client: Client,
    base: String,
    stop: Option<oneshot::Sender<()>>,
    _dir: tempfile::TempDir,
    _profile: tempfile::TempDir,
}

impl Session {
    async fn start(javascript: bool) -> Option<Session> {
        let one = ONE_AT_A_TIME.lock().await;
        let driver = driver()?;
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.identity_source = IdentitySource::Static {
            identity: snowmint::Identity::default(),
            state_dir: dir.path().to_owned(),
        };
        let state = static_state(&config).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(snowmint_server::run(listener, state, async {
            let _ = stopped.await;
        }));

        let profile = tempfile::tempdir().unwrap();
        let mut options = json!({
            "binary": CHROMIUM,
            "args": ["--headless", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run", "--disable-quic",
                "--window-size=1280,1800",
                format!("--user-data-dir={}", profile.path().display())],
        });
        if !javascript {
            options["prefs"] = json!({"profile.managed_default_content_settings.javascript": 2});
        }
        let mut caps = serde_json::Map::new();
        caps.insert("goog:chromeOptions".into(), options);
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{}", driver.port))
            .await
            .expect("a chromium session");
        Some(Session {
            _one: one,
            client,
            base: format!("http://{addr}"),
            stop: Some(stop),
            _dir: dir,
            _profile: profile,
        })
    }

    /// A JavaScript session on the explorer, once its script has run (the
    /// "Now" button is shown then).
    async fn start_live() -> Option<Session> {
        let s = Session::start(true).await?;
        s.goto("/").await;
        s.wait_live().await;
        Some(s)
    }

    /// The element with this id.
    async fn by_id(&self, id: &str) -> fantoccini::elements::Element {
        self.client.find(Locator::Id(id)).await.unwrap()
    }

    /// The first element `css` matches.
    async fn find(&self, css: &str) -> fantoccini::elements::Element {
        self.client.find(Locator::Css(css)).await.unwrap()
    }

    /// The address the browser is at.
    async fn url(&self) -> reqwest::Url {
        self.client.current_url().await.unwrap()
    }

    /// Tabs to the field `id` (which selects its text) and types `text`.
    async fn type_into(&self, id: &str, text: &str) {
        self.tab_to(id).await;
        self.type_active(text).await;
    }

    /// Waits for the page's script to have run (the "Now" button is shown
    /// then).
    async fn wait_live(&self) {
        self.client
            .wait()
            .for_element(Locator::Css("#now:not([hidden])"))
            .await
            .unwrap();
    }

    /// Picks `value` in the `<select>` with this id.
    async fn select(&self, id: &str, value: &str) {
        self.by_id(id).await.select_by_value(value).await.unwrap();
    }

    async fn goto(&self, path: &str) {
        self.client
            .goto(&format!("{}{path}", self.base))
            .await
            .unwrap();
    }

    /// The element's `textContent` (its cells' digits, without layout).
    async fn content(&self, css: &str) -> String {
        let el = self.find(css).await;
        el.prop("textContent").await.unwrap().unwrap_or_default()
    }

    async fn text(&self, css: &str) -> String {
        self.find(css).await.text().await.unwrap()
    }

    /// Waits (bounded) until the element's text satisfies `ok`.
    async fn wait_text(&self, css: &str, ok: impl Fn(&str) -> bool) -> String {
        let mut last = String::new();
        for _ in 0..200 {
            if let Ok(el) = self.client.find(Locator::Css(css)).await
                && let Ok(text) = el.text().await
            {
                if ok(&text) {
                    return text;
                }
                last = text;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{css} never got the expected text; last: {last:?}");
    }

    /// Waits (bounded) until the element's text is `text`.
    async fn wait_text_is(&self, css: &str, text: &str) {
        self.wait_text(css, |t| t == text).await;
    }

    /// Waits (bounded) until the form field `id` holds `expected`.
    async fn wait_value(&self, id: &str, expected: &str) {
        let mut last = None;
        for _ in 0..200 {
            if let Ok(el) = self.client.find(Locator::Id(id)).await
                && let Ok(value) = el.prop("value").await
            {
                if value.as_deref() == Some(expected) {
                    return;
                }
                last = value;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("#{id} never held {expected:?}; last: {last:?}");
    }

    /// The headings of the explanatory sections, in order.
    async fn guide_headings(&self) -> Vec<String> {
        let mut headings = vec![self.text("#guide-h").await];
        for el in self
            .client
            .find_all(Locator::Css("#guide section > h3"))
            .await
            .unwrap()
        {
            headings.push(el.text().await.unwrap());
        }
        headings
    }

    /// Follows the worked example's link and checks that it fills the
    /// compose form and shows the reference ID.
    async fn follow_the_worked_example(&self) {
        // Nothing on a fresh page is the example yet.
        assert_eq!(
            self.by_id("timestamp")
                .await
                .prop("value")
                .await
                .unwrap()
                .as_deref(),
            Some("")
        );
        self.by_id("example-link").await.click().await.unwrap();
        self.wait_value("timestamp", "1288834975657").await;
        for (field, value) in [("datacenter", "1"), ("worker", "1"), ("sequence", "0")] {
            self.wait_value(field, value).await;
        }
        self.wait_text("#id-value", |t| t == "4194439168").await;
        let url = self.url().await;
        assert!(
            url.as_str()
                .contains("?timestamp=1288834975657&datacenter=1&worker=1&sequence=0"),
            "{url}"
        );
        assert_eq!(url.fragment(), Some("compose"), "{url}");
    }

    async fn element_screenshot(&self, css: &str, name: &str) {
        let el = self.find(css).await;
        let png = el.screenshot().await.unwrap();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../artifacts");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), png).unwrap();
    }

    async fn active_id(&self) -> String {
        let el = self.client.active_element().await.unwrap();
        el.attr("id").await.unwrap().unwrap_or_default()
    }

    /// Presses Tab until the element `id` has focus. The key goes to
    /// whatever has focus, as a user's would (WebDriver key actions), not
    /// through "send keys to an element", which first runs its own focusing
    /// steps on the element it is given. A failure names every stop it made.
    async fn tab_to(&self, id: &str) {
        let tab = || {
            KeyActions::new("keyboard".to_owned())
                .then(KeyAction::Down {
                    value: Key::Tab.into(),
                })
                .then(KeyAction::Up {
                    value: Key::Tab.into(),
                })
        };
        let mut stops = Vec::new();
        // The page has many stops (a date picker is several), so allow many.
        for _ in 0..80 {
            let here: String = self
                .client
                .execute(
                    "const e = document.activeElement; \
                     return e ? e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') : 'none'",
                    vec![],
                )
                .await
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            if here.split_once('#').map(|(_, found)| found) == Some(id) {
                return;
            }
            stops.push(here);
            self.client.perform_actions(tab()).await.unwrap();
        }
        panic!(
            "Tab never reached #{id}; the focus went {}",
            stops.join(" > ")
        );
    }

    /// Presses `key` on the focused element.
    async fn press(&self, key: Key) {
        self.type_active(&key.to_string()).await;
    }

    /// The texts of every element `css` matches, in document order, read
    /// in one script run (the live page may swap the elements between two
    /// WebDriver calls).
    async fn texts(&self, css: &str) -> Vec<String> {
        let v = self
            .client
            .execute(
                "return [...document.querySelectorAll(arguments[0])].map(e => e.textContent.trim())",
                vec![json!(css)],
            )
            .await
            .unwrap();
        serde_json::from_value(v).unwrap()
    }

    /// Waits (bounded) until the IDs of the list's rows are `expected`.
    async fn wait_rows(&self, expected: &[&str]) {
        let mut last = Vec::new();
        for _ in 0..200 {
            last = self.texts("#list tbody td:nth-child(2)").await;
            if last == expected {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the list never showed {expected:?}; last {last:?}");
    }

    /// Follows the language link by keyboard and waits for the page in the
    /// other language: the range panel's heading reads `heading`.
    async fn switch_language(&self, heading: &str) {
        self.switch_language_until("#range-h", heading).await;
    }

    /// Follows the language link by keyboard and waits until the element
    /// `css` reads `text`.
    async fn switch_language_until(&self, css: &str, text: &str) {
        self.tab_to("lang-switch").await;
        self.press(Key::Enter).await;
        self.wait_text(css, |t| t == text).await;
    }

    /// Tabs to the decode form's layout select and steps it by `key`.
    async fn step_layout(&self, key: Key) {
        self.tab_to("layout").await;
        self.press(key).await;
    }

    /// Asserts the pasted list's caption and column headings.
    async fn assert_list(&self, caption: &str, headings: &[&str]) {
        assert_eq!(self.content("#list-caption").await, caption);
        self.assert_texts("#list thead th", headings).await;
    }

    /// Asserts the texts of the elements `css` matches.
    async fn assert_texts(&self, css: &str, expected: &[&str]) {
        assert_eq!(self.texts(css).await, expected, "{css}");
    }

    async fn type_active(&self, text: &str) {
        let active = self.client.active_element().await.unwrap();
        active.send_keys(text).await.unwrap();
    }

    async fn screenshot(&self, name: &str) {
        let png = self.client.screenshot().await.unwrap();
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../artifacts");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), png).unwrap();
    }

    /// Whether the element `id` is shown.
    async fn shown(&self, id: &str) -> bool {
        let el = self.by_id(id).await;
        el.is_displayed().await.unwrap()
    }

    /// Waits (bounded) until the element `css` exists.
    async fn wait_for(&self, css: &str) {
        for _ in 0..200 {
            if self.client.find(Locator::Css(css)).await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{css} never appeared");
    }

    /// Waits (bounded) until the element `css` has text and lies wholly
    /// inside the viewport.
    async fn wait_in_view(&self, css: &str) {
        let mut last = json!(null);
        for _ in 0..200 {
            last = self
                .client
                .execute(
                    "const el = document.querySelector(arguments[0]);
                     if (!el || !el.textContent.trim()) return null;
                     const r = el.getBoundingClientRect();
                     return [r.top, r.bottom, window.innerHeight, window.scrollY];",
                    vec![json!(css)],
                )
                .await
                .unwrap();
            if let Some([top, bottom, height, _]) = last.as_array().map(Vec::as_slice)
                && top.as_f64().unwrap() >= 0.0
                && bottom.as_f64().unwrap() <= height.as_f64().unwrap()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{css} never came into view; last [top, bottom, viewport, scrollY]: {last}");
    }

    async fn close(mut self) {
        if let Err(e) = self.client.clone().close().await {
            eprintln!("closing the browser session: {e}");
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

#[tokio::test]
async fn reference_case_by_keyboard_inline_error_and_screenshot() {
    let s = session!(Session::start_live());

    // Keyboard only: Tab to each field (Tab selects its text), type, Enter.
    s.type_into("timestamp", "1288834975657").await;
    s.type_into("datacenter", "1").await;
    s.type_into("worker", "1").await;
    s.type_into("sequence", &format!("0{}", Key::Enter)).await;
    s.wait_text_is("#id-value", "4194439168").await;
    assert_eq!(
        s.content(r#".cells[data-segment="timestamp"]"#).await,
        TIMESTAMP_SEGMENT
    );
    let formula = s.text("#formula").await;
    assert!(
        formula.contains("= (1000 << 22) | (1 << 17) | (1 << 12) | 0"),
        "{formula}"
    );
    assert!(
        formula.contains("= 4194304000 | 131072 | 4096 | 0"),
        "{formula}"
    );
    let url = s.url().await;
    assert!(
        url.as_str()
            .contains("timestamp=1288834975657&datacenter=1&worker=1&sequence=0"),
        "{url}"
    );
    s.screenshot("explorer.png").await;
    s.by_id("copy").await.click().await.unwrap();
    s.wait_text_is("#copy-status", "Copied").await;

    // Typing an out-of-range datacenter shows the error next to the field.
    let datacenter = s.by_id("datacenter").await;
    datacenter.click().await.unwrap();
    datacenter
        .send_keys(&format!("{}2", Key::Backspace))
        .await
        .unwrap();
    datacenter
        .send_keys(&format!("{}{}32", Key::End, Key::Backspace))
        .await
        .unwrap();
    let error = s.wait_text("#datacenter-error", |t| !t.is_empty()).await;
    assert!(
        error.contains("datacenter must be 0..=31, got 32"),
        "{error}"
    );
    assert_eq!(
        datacenter.attr("aria-invalid").await.unwrap().as_deref(),
        Some("true")
    );
    s.wait_text("#result", |t| t.contains("Fix the marked field"))
        .await;
    s.screenshot("explorer-error.png").await;
    // Nothing else broke: fixing it brings the ID back.
    datacenter
        .send_keys(&format!("{}{}1", Key::Backspace, Key::Backspace))
        .await
        .unwrap();
    s.wait_text_is("#id-value", "4194439168").await;
    assert!(
        !s.by_id("datacenter-error")
            .await
            .is_displayed()
            .await
            .unwrap()
    );

    // A phone-sized window still shows everything.
    s.client.set_window_size(390, 1400).await.unwrap();
    s.screenshot("explorer-phone.png").await;
    s.close().await;
}

#[tokio::test]
async fn decode_switch_to_norwegian_and_mint_live() {
    let s = session!(Session::start_live());

    let id = s.by_id("id").await;
    id.send_keys("4194439168").await.unwrap();
    s.wait_text_is("#id-value", "4194439168").await;
    assert_eq!(
        s.content(r#".cells[data-segment="timestamp"]"#).await,
        TIMESTAMP_SEGMENT
    );
    assert_eq!(s.text("#time-value").await, "2010-11-04T01:42:55.657Z");
    // Another form: hexadecimal.
    s.select("from", "hex").await;
    retype(&id, "7fffffffffffffff").await;
    s.wait_text_is("#id-value", "9223372036854775807").await;
    // A bad ID: inline error naming the range.
    retype(&id, "zz").await;
    let error = s.wait_text("#id-error", |t| !t.is_empty()).await;
    assert!(error.contains("0..=9223372036854775807"), "{error}");
    s.select("from", "decimal").await;
    retype(&id, "4194439168").await;
    s.wait_text_is("#id-value", "4194439168").await;

    // Switch to Norwegian: the same result, every heading in Bokmål.
    s.by_id("lang-switch").await.click().await.unwrap();
    s.wait_text_is("#decode-h", "Dekod en ID").await;
    let lang = s.find("html").await.attr("lang").await.unwrap();
    assert_eq!(lang.as_deref(), Some("nb"));
    assert_eq!(s.text("#id-value").await, "4194439168");
    assert_eq!(s.text("#compose-h").await, "Lag en ID");
    assert_eq!(s.text("#lang-switch").await, "English");
    s.screenshot("explorer-nb.png").await;

    // "Nå" fills in the current time and composes it.
    s.by_id("now").await.click().await.unwrap();
    let now = s.by_id("timestamp").await;
    let typed = now.prop("value").await.unwrap().unwrap_or_default();
    let ms: u64 = typed.parse().expect("Now fills in Unix ms");
    s.wait_text("#result", |t| t.contains(&ms.to_string()))
        .await;

    // Live mode: IDs minted by this server, listed as strings.
    s.find("#live-form button[type=submit]")
        .await
        .click()
        .await
        .unwrap();
    s.wait_text("#live-list", |t| t.lines().count() >= 5).await;
    let links = s
        .client
        .find_all(Locator::Css("#live-list li a"))
        .await
        .unwrap();
    let mut ids = Vec::new();
    for link in links {
        ids.push(link.text().await.unwrap().parse::<u64>().unwrap());
    }
    assert_eq!(ids.len(), 5);
    assert!(
        ids.windows(2).all(|w| w[0] > w[1]),
        "newest first, strictly decreasing: {ids:?}"
    );
    let meta = s.text("#live-list li .meta").await;
    assert!(meta.contains("sekvens"), "{meta}");
    // A bad count: an inline error in Bokmål, and nothing minted.
    let count = s.by_id("count").await;
    retype(&count, &format!("5000{}", Key::Enter)).await;
    let error = s.wait_text("#count-error", |t| !t.is_empty()).await;
    assert!(
        error.contains("1..=4096") && error.contains("fikk"),
        "{error}"
    );
    assert_eq!(
        s.client
            .find_all(Locator::Css("#live-list li"))
            .await
            .unwrap()
            .len(),
        5
    );
    s.close().await;
}

#[tokio::test]
async fn works_without_javascript() {
    let s = session!(Session::start(false));
    s.goto("/").await;
    assert!(!s.by_id("now").await.is_displayed().await.unwrap());
    for (field, value) in [
        ("timestamp", "1288834975657"),
        ("datacenter", "1"),
        ("worker", "1"),
        ("sequence", "0"),
    ] {
        let input = s.by_id(field).await;
        retype(&input, value).await;
    }
    s.find("#compose-form button[type=submit]")
        .await
        .click()
        .await
        .unwrap();
    s.wait_text_is("#id-value", "4194439168").await;
    let url = s.url().await;
    assert!(
        url.as_str().contains("datacenter=1"),
        "the result has a URL: {url}"
    );
    assert_eq!(
        s.content(r#".cells[data-segment="timestamp"]"#).await,
        TIMESTAMP_SEGMENT
    );

    let datacenter = s.by_id("datacenter").await;
    retype(&datacenter, &format!("32{}", Key::Enter)).await;
    let error = s.wait_text("#datacenter-error", |t| !t.is_empty()).await;
    assert!(
        error.contains("datacenter must be 0..=31, got 32"),
        "{error}"
    );

    // Decode by form, too.
    let id = s.by_id("id").await;
    id.send_keys(&format!("4194439168{}", Key::Enter))
        .await
        .unwrap();
    s.wait_text_is("#id-value", "4194439168").await;
    assert!(s.url().await.as_str().contains("id=4194439168"));

    // The worked example's link fills the form without the script too.
    s.goto("/").await;
    s.follow_the_worked_example().await;
    s.close().await;
}

#[tokio::test]
async fn the_guide_in_both_languages_and_its_example_fills_the_form() {
    let s = session!(Session::start_live());
    assert_eq!(
        s.guide_headings().await,
        [
            "Snowflake IDs explained",
            "What a Snowflake ID is",
            "How this tool works",
            "Why the IDs sort by time",
            "A worked example, step by step",
            "Where Snowflake IDs are used",
            "This calculator versus a production minter",
            "A short history",
        ]
    );
    let steps = s.text("#guide-example .steps").await;
    assert!(steps.contains("1000 << 22 = 4,194,304,000"), "{steps}");
    assert!(steps.contains("= 4,194,439,168"), "{steps}");
    s.element_screenshot("#guide-example", "explorer-guide-example.png")
        .await;
    s.client.set_window_size(390, 1400).await.unwrap();
    s.element_screenshot("#guide-example", "explorer-guide-example-phone.png")
        .await;
    s.client.set_window_size(1280, 1800).await.unwrap();
    s.follow_the_worked_example().await;
    s.screenshot("explorer-guide-example-followed.png").await;

    s.goto("/?lang=nb").await;
    s.wait_live().await;
    assert_eq!(
        s.guide_headings().await,
        [
            "Snowflake-ID-er forklart",
            "Hva en Snowflake-ID er",
            "Slik virker verktøyet",
            "Hvorfor ID-ene sorteres etter tid",
            "Et regneeksempel, steg for steg",
            "Hvor Snowflake-ID-er brukes",
            "Kalkulatoren og en ekte ID-generator",
            "Litt historie",
        ]
    );
    // textContent: WebDriver's text turns no-break spaces into spaces.
    let steps = s.content("#guide-example .steps").await;
    assert!(
        steps.contains("1000 << 22 = 4\u{a0}194\u{a0}304\u{a0}000"),
        "{steps:?}"
    );
    s.element_screenshot("#guide-example", "explorer-guide-example-nb.png")
        .await;
    s.follow_the_worked_example().await;
    // Still in Bokmål after the link.
    assert!(s.url().await.as_str().contains("lang=nb"));
    assert_eq!(s.text("#compose-h").await, "Lag en ID");
    s.close().await;
}

/// The ID range of January 2024, as the contract computes it.
fn january_2024() -> (u64, u64) {
    let epoch = 1288834974657u64;
    let min = (1704067200000 - epoch) << 22;
    let max = ((1706745600000 - epoch) << 22) | 4194303;
    (min, max)
}

#[tokio::test]
async fn range_panel_by_keyboard_in_both_languages() {
    let s = session!(Session::start_live());
    let (min, max) = january_2024();
    s.type_into("range_from", "2024-01-01T00:00:00Z").await;
    // The picker follows the typed time.
    s.wait_value("range_from_at", "2024-01-01T00:00").await;
    s.type_into("range_to", &format!("2024-02-01T00:00:00Z{}", Key::Enter))
        .await;
    s.wait_text_is("#range-min", &min.to_string()).await;
    assert_eq!(s.text("#range-max").await, max.to_string());
    assert_eq!(s.text("#range-slots").await, {
        let n = (max - min + 1).to_string();
        // 11,228,890,398,720 grouped by thousands.
        let mut out = String::new();
        for (i, c) in n.chars().enumerate() {
            if i > 0 && (n.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    });
    assert_eq!(
        s.text("#sql").await,
        format!("WHERE id BETWEEN {min} AND {max}")
    );
    let url = s.url().await;
    assert!(url.as_str().contains("range_from=2024-01-01"), "{url}");
    // Copy the SQL from the keyboard.
    s.tab_to("copy-sql").await;
    s.press(Key::Enter).await;
    s.wait_text_is("#copy-sql-status", "Copied").await;
    s.screenshot("explorer-range.png").await;

    // The SQL functions follow the dialect select, live; their copy button
    // copies the whole script.
    s.wait_text_is("#sql-functions-h", "SQL functions (PostgreSQL)")
        .await;
    s.select("range-dialect", "mysql").await;
    s.wait_text_is("#sql-functions-h", "SQL functions (MySQL / MariaDB)")
        .await;
    let script = s.content("#sql-functions").await;
    let want = snowmint::sql::functions(
        snowmint::sql::Dialect::Mysql,
        &snowmint::Layout::TWITTER,
        &snowmint::sql::Options::default(),
    )
    .unwrap();
    assert_eq!(script, want);
    let url = s.url().await;
    assert!(url.as_str().contains("dialect=mysql"), "{url}");
    s.tab_to("copy-sql-functions").await;
    s.press(Key::Enter).await;
    s.wait_text_is("#copy-sql-functions-status", "Copied").await;

    // Backwards: an inline error on `to`.
    s.type_into("range_to", &format!("2023-12-31T00:00:00Z{}", Key::Enter))
        .await;
    let error = s.wait_text("#range_to-error", |t| !t.is_empty()).await;
    assert!(error.starts_with("to must be at or after from"), "{error}");
    s.wait_text("#result", |t| t.contains("to see the ID range"))
        .await;

    // In Bokmål: the same form, the error in Bokmål, then fixed.
    s.switch_language("ID-ene i et tidsrom").await;
    let error = s.text("#range_to-error").await;
    assert!(
        error.starts_with("Til-tiden må være lik eller etter fra-tiden"),
        "{error}"
    );
    s.type_into("range_to", &format!("2024-02-01T00:00:00Z{}", Key::Enter))
        .await;
    s.wait_text_is("#range-max", &max.to_string()).await;
    assert_eq!(s.text("#range-min").await, min.to_string());
    let slots = s.content("#range-slots").await;
    assert!(slots.contains('\u{a0}'), "grouped in Bokmål: {slots:?}");
    s.screenshot("explorer-range-nb.png").await;

    // The picker fills the field too (set as a picker sets it).
    s.client
        .execute(
            "const p = document.getElementById('range_from_at'); \
             p.value = '2024-01-01T00:00:00.000'; \
             p.dispatchEvent(new Event('change', {bubbles: true}));",
            vec![],
        )
        .await
        .unwrap();
    s.wait_value("range_from", "1704067200000").await;
    s.close().await;
}

#[tokio::test]
async fn pasted_list_by_keyboard_sorts_in_both_languages() {
    let s = session!(Session::start_live());
    let (late, early) = ("175928847299117063", "4194439168");
    s.type_into("ids", &format!("{late}\n{early}")).await;
    s.wait_rows(&[late, early]).await;
    s.assert_list(
        "2 IDs, read in the Twitter layout",
        &[
            "Line ▲",
            "ID",
            "Time (UTC)",
            "Datacenter",
            "Worker",
            "Sequence",
        ],
    )
    .await;
    // Sort by time from the keyboard; the focus stays on the heading.
    s.tab_to("sort-time").await;
    s.press(Key::Enter).await;
    s.wait_rows(&[early, late]).await;
    s.wait_text("#sort-time", |t| t.ends_with('▲')).await;
    assert_eq!(s.active_id().await, "sort-time");
    s.press(Key::Enter).await;
    s.wait_rows(&[late, early]).await;
    assert!(s.text("#sort-time").await.ends_with('▼'));
    assert!(s.url().await.as_str().contains("sort=-time"));
    s.screenshot("explorer-list.png").await;

    // A bad third line is named by its number.
    s.tab_to("ids").await;
    // To the end of the text, not of the caret's line.
    s.type_active(&format!("{}{}", Key::Control, Key::End))
        .await;
    s.type_active("\nzz").await;
    let error = s.wait_text("#ids-error", |t| !t.is_empty()).await;
    assert!(error.starts_with("line 3: id must be"), "{error}");
    s.wait_text("#result", |t| t.contains("Fix the marked line"))
        .await;

    // Bokmål: the error and then the table, headed in Bokmål.
    s.switch_language_until("#decode-h", "Dekod en ID").await;
    let error = s.text("#ids-error").await;
    assert!(error.starts_with("linje 3: ID-en må være"), "{error}");
    s.tab_to("ids").await;
    // To the end of the text, not of the caret's line.
    s.type_active(&format!("{}{}", Key::Control, Key::End))
        .await;
    s.type_active(&format!("{}{}", Key::Backspace, Key::Backspace))
        .await;
    s.wait_rows(&[late, early]).await;
    s.assert_list(
        "2 ID-er, lest i Twitter-oppsettet",
        &[
            "Linje ▲",
            "ID",
            "Tid (UTC)",
            "Datasenter",
            "Arbeider",
            "Sekvens",
        ],
    )
    .await;
    s.screenshot("explorer-list-nb.png").await;
    s.close().await;
}

#[tokio::test]
async fn layout_select_by_keyboard_in_both_languages_and_bits_on_a_phone() {
    let s = session!(Session::start_live());
    s.type_into("id", "175928847299117063").await;
    s.wait_text_is("#id-value", "175928847299117063").await;
    // Twitter's reading first, then Discord's: one step down the select.
    s.step_layout(Key::Down).await;
    s.wait_text_is("#time-value", "2016-04-30T11:18:25.796Z")
        .await;
    assert_eq!(s.text("#layout-value").await, "Discord");
    // Discord's docs draw a 42-bit timestamp: no sign segment of its own.
    let labels = s.texts(BIT_LABELS).await;
    assert_eq!(labels, ["Timestamp", "Worker", "Process", "Increment"]);
    assert_eq!(
        s.content(r#".cells[data-segment="increment"]"#).await,
        "000000000111"
    );
    let formula = s.text("#formula").await;
    assert!(formula.contains("= 175928847299117063"), "{formula}");
    s.screenshot("explorer-layout-discord.png").await;

    // Instagram: no sign segment, no datacenter, a 13-bit shard.
    s.press(Key::Down).await;
    s.wait_text_is("#layout-value", "Instagram").await;
    s.assert_texts(BIT_LABELS, &["Timestamp", "Shard", "Sequence"])
        .await;

    // Bokmål keeps the layout and names its fields.
    s.switch_language_until("#decode-h", "Dekod en ID").await;
    s.assert_texts(BIT_LABELS, &["Tidsstempel", "Shard", "Sekvens"])
        .await;
    s.step_layout(Key::Up).await;
    s.wait_text_is("#layout-value", "Discord").await;
    s.assert_texts(
        BIT_LABELS,
        &["Tidsstempel", "Arbeider", "Prosess", "Teller"],
    )
    .await;
    s.screenshot("explorer-layout-discord-nb.png").await;

    // On a phone the 64 bits scroll sideways, say so, and scroll by keyboard.
    s.client.set_window_size(390, 1400).await.unwrap();
    s.wait_text("#bits-scroll", |t| t.starts_with("Rull sidelengs"))
        .await;
    s.tab_to("bits").await;
    s.press(Key::Right).await;
    let mut scrolled = 0.0;
    for _ in 0..200 {
        scrolled = s
            .client
            .execute("return document.getElementById('bits').scrollLeft", vec![])
            .await
            .unwrap()
            .as_f64()
            .unwrap_or(0.0);
        if scrolled > 0.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(scrolled > 0.0, "the bits never scrolled");
    s.screenshot("explorer-bits-phone.png").await;
    s.close().await;
}

#[tokio::test]
async fn a_custom_layout_and_the_lab_by_keyboard_in_both_languages() {
    let s = session!(Session::start_live());
    // "Our own snowflake": epoch 2020, a 10-bit machine, 12 bits of sequence.
    let id = ((86_400_000u64 << 22) | (1023 << 12) | 5).to_string();
    s.type_into("id", &id).await;
    s.wait_text_is("#id-value", &id).await;
    // The lab states Twitter's limits plainly.
    s.wait_text("#lab-facts", |t| {
        t.contains(
            "IDs of this layout stopped being safe JavaScript numbers 24 days after its epoch",
        )
    })
    .await;
    // Custom… is the select's last choice; its parts follow it.
    s.tab_to("layout").await;
    s.press(Key::End).await;
    s.wait_text("#layout-error", |t| {
        t.starts_with("invalid layout: the epoch must be")
    })
    .await;
    s.type_into("layout-epoch", "2020-01-01").await;
    s.type_into("layout-fields", "timestamp:41,machine:10,sequence:12")
        .await;
    s.wait_text_is("#time-value", "2020-01-02T00:00:00.000Z")
        .await;
    assert_eq!(s.text("#layout-value").await, "Custom");
    s.assert_texts(BIT_LABELS, &["Sign", "Timestamp", "Machine", "Sequence"])
        .await;
    assert_eq!(
        s.text("#lab-spec").await,
        "epoch=1577836800000;fields=timestamp:41,machine:10,sequence:12"
    );
    // The share link carries the spec, and opens the same layout.
    let share = s.by_id("share").await;
    let href = share.attr("href").await.unwrap().unwrap();
    assert!(
        href.contains("layout=epoch%3D1577836800000%3Bfields%3D"),
        "{href}"
    );
    s.screenshot("explorer-custom-layout.png").await;

    // Bokmål keeps the custom layout; a mistake is named in place.
    s.switch_language_until("#lab-h", "Oppsettlaben").await;
    s.assert_texts(BIT_LABELS, &["Fortegn", "Tidsstempel", "Maskin", "Sekvens"])
        .await;
    s.wait_text("#lab-facts", |t| t.contains("24 dager etter epoken"))
        .await;
    s.tab_to("layout-fields").await;
    // Tab selects the field's text: go to its end, then add a field.
    s.press(Key::End).await;
    s.type_active(",extra:9").await;
    s.wait_text_is(
        "#layout-error",
        "ugyldig oppsett: breddene blir til sammen 72 biter, mer enn 64",
    )
    .await;
    s.screenshot("explorer-custom-layout-nb.png").await;
    s.close().await;
}

#[tokio::test]
async fn list_range_and_repeated_parameters_without_javascript() {
    let s = session!(Session::start(false));
    s.goto("/?ids=175928847299117063%0A4194439168").await;
    s.wait_rows(&["175928847299117063", "4194439168"]).await;
    // The sort headings submit the decode form: the server sorts.
    s.tab_to("sort-time").await;
    s.press(Key::Enter).await;
    s.wait_rows(&["4194439168", "175928847299117063"]).await;
    assert!(s.url().await.as_str().contains("sort=time"));

    let (min, max) = january_2024();
    s.type_into("range_from", "2024-01-01T00:00:00Z").await;
    s.type_into("range_to", &format!("2024-02-01T00:00:00Z{}", Key::Enter))
        .await;
    s.wait_text_is("#range-max", &max.to_string()).await;
    assert_eq!(s.text("#range-min").await, min.to_string());
    // The server filled the pickers.
    s.wait_value("range_to_at", "2024-02-01T00:00").await;

    s.goto("/?datacenter=1&datacenter=2&lang=nb").await;
    let error = s.text("#datacenter-error").await;
    assert!(
        error.starts_with("datacenter står mer enn én gang"),
        "{error}"
    );
    s.close().await;
}

/// A Chrome DevTools Protocol command, sent through chromedriver's
/// `goog/cdp/execute` (emulation WebDriver itself has no command for).
#[derive(Debug)]
struct Cdp {
    cmd: &'static str,
    params: serde_json::Value,
}

impl fantoccini::wd::WebDriverCompatibleCommand for Cdp {
    fn endpoint(
        &self,
        base_url: &reqwest::Url,
        session_id: Option<&str>,
    ) -> Result<reqwest::Url, <reqwest::Url as std::str::FromStr>::Err> {
        base_url.join(&format!(
            "session/{}/goog/cdp/execute",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &reqwest::Url) -> (axum::http::Method, Option<String>) {
        let body = json!({ "cmd": self.cmd, "params": self.params });
        (axum::http::Method::POST, Some(body.to_string()))
    }
}

impl Session {
    async fn cdp(&self, cmd: &'static str, params: serde_json::Value) {
        self.client
            .issue_cmd(Cdp { cmd, params })
            .await
            .unwrap_or_else(|e| panic!("{cmd}: {e}"));
    }

    /// Emulates `prefers-color-scheme` (`"dark"` or `"light"`).
    async fn color_scheme(&self, scheme: &str) {
        self.cdp(
            "Emulation.setEmulatedMedia",
            json!({ "features": [{ "name": "prefers-color-scheme", "value": scheme }] }),
        )
        .await;
    }

    /// A computed style property of the element `css`.
    async fn style(&self, css: &str, property: &str) -> String {
        let v = self
            .client
            .execute(
                "return getComputedStyle(document.querySelector(arguments[0]))[arguments[1]]",
                vec![json!(css), json!(property)],
            )
            .await
            .unwrap();
        v.as_str().unwrap_or_default().to_owned()
    }

    /// Asserts that nothing on the page reaches past the viewport's right
    /// edge and that the page does not scroll sideways. What a scrolling
    /// box (the bits, a table, the formula) clips is inside that box, so
    /// only the box itself is measured.
    async fn assert_fits(&self, what: &str) {
        let v = self
            .client
            .execute(
                r#"const width = document.documentElement.clientWidth;
                const clipped = (el) => {
                  for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
                    if (getComputedStyle(p).overflowX !== "visible") return true;
                  }
                  return false;
                };
                const wide = [];
                for (const el of document.body.querySelectorAll("*")) {
                  const r = el.getBoundingClientRect();
                  if (r.width === 0 && r.height === 0) continue;
                  if (r.right > width + 0.5 && !clipped(el)) {
                    wide.push(`${el.tagName.toLowerCase()}#${el.id}.${el.className} right ${r.right}`);
                  }
                }
                return { width, scroll: document.documentElement.scrollWidth, wide };"#,
                vec![],
            )
            .await
            .unwrap();
        let width = v["width"].as_f64().unwrap();
        let scroll = v["scroll"].as_f64().unwrap();
        // The window is 360 px; a classic scroll bar may take some of it.
        assert!((300.0..=360.0).contains(&width), "{what}: viewport {width}");
        assert!(
            v["wide"].as_array().unwrap().is_empty(),
            "{what}: wider than the {width} px screen: {}",
            v["wide"]
        );
        assert!(
            scroll <= width,
            "{what}: scrollWidth {scroll} > clientWidth {width}"
        );
    }
}

#[tokio::test]
async fn nothing_is_wider_than_a_360_px_screen_in_both_languages() {
    let s = session!(Session::start_live());
    s.client.set_window_size(360, 1400).await.unwrap();
    s.wait_text("#bits-scroll", |t| t.starts_with("Scroll"))
        .await;
    s.assert_fits("the page").await;
    // A decoded ID, typed by keyboard, in Discord's layout.
    s.type_into("id", "175928847299117063").await;
    s.step_layout(Key::Down).await;
    s.wait_text_is("#layout-value", "Discord").await;
    s.assert_fits("a decoded ID").await;
    // A range, the panel whose date pickers overflowed.
    s.type_into("range_from", "2024-01-01T00:00:00Z").await;
    s.press(Key::Enter).await;
    s.wait_text("#range-min", |t| !t.is_empty()).await;
    s.assert_fits("a range").await;
    s.switch_language("ID-ene i et tidsrom").await;
    s.assert_fits("the range in Bokmål").await;
    s.goto("/?id=175928847299117063&layout=discord&lang=nb")
        .await;
    s.wait_text_is("#layout-value", "Discord").await;
    s.assert_fits("a decoded ID in Bokmål").await;
    s.screenshot("explorer-360px-nb.png").await;
    s.close().await;
}

#[tokio::test]
async fn dark_scheme_discord_markup_and_local_time_in_both_languages() {
    let s = session!(Session::start_live());
    let light = (
        s.style("body", "backgroundColor").await,
        s.style(".card", "backgroundColor").await,
    );
    s.color_scheme("dark").await;
    let dark = (
        s.style("body", "backgroundColor").await,
        s.style(".card", "backgroundColor").await,
    );
    assert_ne!(light.0, dark.0, "the body's background");
    assert_ne!(light.1, dark.1, "a card's background");
    assert_ne!(
        s.style(".seg-timestamp", "backgroundColor").await,
        "",
        "the timestamp segment has a colour"
    );
    s.screenshot("explorer-dark.png").await;

    // Oslo: the reader's zone is two hours ahead of UTC on 30 April 2016.
    s.cdp(
        "Emulation.setTimezoneOverride",
        json!({ "timezoneId": "Europe/Oslo" }),
    )
    .await;
    s.type_into("id", "175928847299117063").await;
    s.step_layout(Key::Down).await;
    s.wait_text_is("#time-value", "2016-04-30T11:18:25.796Z")
        .await;
    assert_eq!(s.text("#discord-full").await, "<t:1462015105:F>");
    assert_eq!(s.text("#discord-relative").await, "<t:1462015105:R>");
    let local = s.wait_text("#time-local", |t| !t.is_empty()).await;
    assert!(
        local.contains("1:18:25 PM") && local.ends_with("(Europe/Oslo)"),
        "{local}"
    );
    s.tab_to("copy-discord-relative").await;
    s.press(Key::Enter).await;
    s.wait_text_is("#copy-discord-status", "Copied").await;

    s.switch_language("ID-ene i et tidsrom").await;
    // The dark scheme and the zone stay on the new page.
    assert_eq!(s.style("body", "backgroundColor").await, dark.0);
    let local = s.wait_text("#time-local", |t| !t.is_empty()).await;
    assert!(
        local.contains("13:18:25") && local.ends_with("(Europe/Oslo)"),
        "{local}"
    );
    assert_eq!(s.text("#discord-full").await, "<t:1462015105:F>");
    s.tab_to("copy-discord-full").await;
    s.press(Key::Enter).await;
    s.wait_text_is("#copy-discord-status", "Kopiert").await;
    s.screenshot("explorer-dark-nb.png").await;
    s.close().await;
}

#[tokio::test]
async fn discord_markup_and_utc_alone_without_javascript() {
    let s = session!(Session::start(false));
    for lang in ["en", "nb"] {
        s.goto(&format!(
            "/?id=175928847299117063&layout=discord&lang={lang}"
        ))
        .await;
        assert_eq!(s.text("#time-value").await, "2016-04-30T11:18:25.796Z");
        assert_eq!(s.text("#discord-full").await, "<t:1462015105:F>");
        let local = s.by_id("time-local").await;
        assert!(
            !local.is_displayed().await.unwrap(),
            "{lang}: no local time"
        );
        let copy = s.by_id("copy-discord-full").await;
        assert!(
            !copy.is_displayed().await.unwrap(),
            "{lang}: no copy button"
        );
    }
    s.close().await;
}

#[tokio::test]
async fn compose_in_discords_layout_by_keyboard_in_both_languages() {
    let s = session!(Session::start_live());
    // Twitter's fields first; one step down the select is Discord's.
    s.assert_texts(
        COMPOSE_LABELS,
        &[
            "Datacenter ID (0–31)",
            "Worker ID (0–31)",
            "Sequence (0–4095)",
        ],
    )
    .await;
    s.tab_to("compose-layout").await;
    s.press(Key::Down).await;
    s.wait_for(r#"#compose-fields[data-layout="discord"] #increment"#)
        .await;
    s.assert_texts(
        COMPOSE_LABELS,
        &["Worker (0–31)", "Process (0–31)", "Increment (0–4095)"],
    )
    .await;
    // Discord's documented example, typed field by field (Tab selects
    // each field's text).
    s.type_into("timestamp", "1462015105796").await;
    s.type_into("worker", "1").await;
    s.type_into("process", "0").await;
    s.type_into("increment", &format!("7{}", Key::Enter)).await;
    s.wait_text_is("#id-value", "175928847299117063").await;
    assert_eq!(s.text("#layout-value").await, "Discord");
    assert_eq!(
        s.content(r#".cells[data-segment="increment"]"#).await,
        "000000000111"
    );
    let url = s.url().await;
    assert!(
        url.as_str().contains("layout=discord")
            && url.as_str().contains("worker=1&process=0&increment=7"),
        "{url}"
    );
    s.screenshot("explorer-compose-discord.png").await;

    // Bokmål keeps the layout and the values, and names a bad one in place.
    s.switch_language("ID-ene i et tidsrom").await;
    s.wait_text_is("#id-value", "175928847299117063").await;
    s.assert_texts(
        COMPOSE_LABELS,
        &["Arbeider (0–31)", "Prosess (0–31)", "Teller (0–4095)"],
    )
    .await;
    s.type_into("process", "32").await;
    s.wait_text_is(
        "#process-error",
        "Feltet process må være et heltall i 0..=31, fikk «32»",
    )
    .await;
    let process = s.by_id("process").await;
    assert_eq!(
        process.attr("aria-invalid").await.unwrap().as_deref(),
        Some("true")
    );
    s.type_active(&format!("{}{}0", Key::Backspace, Key::Backspace))
        .await;
    s.wait_text_is("#id-value", "175928847299117063").await;
    assert!(!s.shown("process-error").await);
    s.screenshot("explorer-compose-discord-nb.png").await;
    s.close().await;
}

#[tokio::test]
async fn custom_inputs_are_hidden_until_custom_is_chosen_in_both_languages() {
    let s = session!(Session::start_live());
    for (lang, other_heading) in [("en", "ID-ene i et tidsrom"), ("nb", "IDs in a time span")] {
        for form in ["compose-layout", "layout", "range-layout"] {
            assert!(!s.shown(&format!("{form}-custom")).await, "{lang}: {form}");
        }
        // Tab passes over the hidden parts: from the select to the form's
        // button.
        s.tab_to("layout").await;
        s.press(Key::Tab).await;
        assert_eq!(
            s.client
                .active_element()
                .await
                .unwrap()
                .attr("type")
                .await
                .unwrap()
                .as_deref(),
            Some("submit"),
            "{lang}"
        );
        // Custom… (the last choice) shows them, and the keyboard reaches them.
        s.tab_to("layout").await;
        s.press(Key::End).await;
        assert!(s.shown("layout-custom").await, "{lang}");
        assert!(!s.shown("compose-layout-custom").await, "{lang}");
        s.tab_to("layout-epoch").await;
        assert_eq!(s.active_id().await, "layout-epoch");
        // Back to a preset hides them again.
        s.tab_to("layout").await;
        s.press(Key::Home).await;
        assert!(!s.shown("layout-custom").await, "{lang}");
        if lang == "en" {
            s.screenshot("explorer-custom-hidden.png").await;
            s.switch_language(other_heading).await;
        }
    }
    s.close().await;
}

#[tokio::test]
async fn a_pasted_list_says_which_system_made_it_in_both_languages() {
    let s = session!(Session::start_live());
    let ids = fixtures::sonyflake_ids();
    s.type_into("ids", &ids.join("\n")).await;
    s.wait_text("#list-caption", |t| t.starts_with("20 IDs"))
        .await;
    s.wait_text_is("#detect li:first-child .candidate", "Sonyflake")
        .await;
    assert_eq!(s.text("#detect-h").await, "Which system made these IDs?");
    let why = s.text("#detect li:first-child .why").await;
    assert!(why.contains("machine constant across the list"), "{why}");
    assert!(s.client.find(Locator::Id("detect-note")).await.is_err());
    s.screenshot("explorer-detect.png").await;

    s.switch_language("ID-ene i et tidsrom").await;
    s.wait_text_is("#detect-h", "Hvilket system laget disse ID-ene?")
        .await;
    assert_eq!(
        s.text("#detect li:first-child .candidate").await,
        "Sonyflake"
    );
    let why = s.text("#detect li:first-child .why").await;
    assert!(why.contains("machine er konstant i hele listen"), "{why}");

    // One ID alone fits Twitter's and Discord's alike: said so.
    s.type_into("ids", &format!("{}a{}", Key::Control, Key::Backspace))
        .await;
    s.type_active("175928847299117063").await;
    s.wait_text("#detect-note", |t| t.starts_with("Tvetydig: denne ID-en"))
        .await;
    s.screenshot("explorer-detect-nb.png").await;
    s.close().await;
}

#[tokio::test]
async fn compose_in_another_layout_and_custom_inputs_without_javascript() {
    let s = session!(Session::start(false));
    for lang in ["en", "nb"] {
        s.goto(&format!("/?lang={lang}")).await;
        // Without the script the custom parts stay shown, so they work.
        assert!(s.shown("compose-layout-custom").await, "{lang}");
        // Choose Discord and submit: the form comes back with its fields.
        s.tab_to("compose-layout").await;
        s.press(Key::Down).await;
        s.type_into("timestamp", &format!("1462015105796{}", Key::Enter))
            .await;
        s.wait_for("#increment").await;
        assert!(s.client.find(Locator::Id("datacenter")).await.is_err());
        s.type_into("worker", "1").await;
        s.type_into("process", "0").await;
        s.type_into("increment", &format!("7{}", Key::Enter)).await;
        s.wait_text_is("#id-value", "175928847299117063").await;
        let url = s.url().await;
        assert!(url.as_str().contains("layout=discord"), "{lang}: {url}");
        // A value out of range is named in place, in the page's language.
        s.type_into("process", &format!("32{}", Key::Enter)).await;
        let error = s.wait_text("#process-error", |t| !t.is_empty()).await;
        let expected = match lang {
            "en" => "process must be 0..=31, got 32",
            _ => "Feltet process må være et heltall i 0..=31, fikk «32»",
        };
        assert_eq!(error, expected);
    }
    s.close().await;
}

/// After a submit the result is where the reader is: on a phone-sized
/// window (the result card is the fourth down, past three forms), the
/// answer is in the viewport, with and without JavaScript.
#[tokio::test]
async fn a_submitted_result_is_in_view_on_a_phone_with_and_without_javascript() {
    for javascript in [false, true] {
        let s = session!(Session::start(javascript));
        s.client.set_window_size(360, 740).await.unwrap();
        for (field, typed, answer) in [
            ("id", "4194439168", "#id-value"),
            ("datacenter", "1", "#id-value"),
            ("range_from", "2024-01-01T00:00:00Z", "#range-min"),
        ] {
            s.goto("/").await;
            if javascript {
                s.wait_for("#now:not([hidden])").await;
            }
            let input = s.by_id(field).await;
            retype(&input, typed).await;
            input.send_keys(&Key::Enter.to_string()).await.unwrap();
            s.wait_in_view(answer).await;
        }
        s.close().await;
    }
}
