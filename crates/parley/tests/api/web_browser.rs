//! A browser without JavaScript for the web app's tests: its own cookie
//! jar, forms posted as browsers post them, redirects shown rather than
//! followed.

use std::collections::BTreeMap;

use reqwest::header::{COOKIE, SET_COOKIE};
use reqwest::{Method, StatusCode};

use crate::helpers::*;

/// A browser: its own cookies, redirects shown rather than followed.
pub struct Browser {
    client: reqwest::Client,
    base: String,
    pub cookies: BTreeMap<String, String>,
}

/// What a page request answered.
pub struct Page {
    pub status: StatusCode,
    pub location: Option<String>,
    pub set_cookies: Vec<String>,
    pub headers: reqwest::header::HeaderMap,
    pub html: String,
}

impl Page {
    /// The value of the form field `name` on the page.
    pub fn field(&self, name: &str) -> String {
        let marker = format!("name=\"{name}\" value=\"");
        let start = self.html.find(&marker).unwrap_or_else(|| panic!("no {name} field in {}", self.html)) + marker.len();
        self.html[start..].split('"').next().unwrap_or_default().to_owned()
    }

    /// The value of the first attribute `name` on the page.
    pub fn attr(&self, name: &str) -> String {
        let marker = format!("{name}=\"");
        let start = self.html.find(&marker).unwrap_or_else(|| panic!("no {name} in {}", self.html)) + marker.len();
        self.html[start..].split('"').next().unwrap_or_default().to_owned()
    }

    /// The id of the first conversation an inbox page links to.
    pub fn first_conversation(&self) -> i64 {
        let marker = "/app/conversations/";
        let start = self.html.find(marker).expect("a conversation in the inbox") + marker.len();
        self.html[start..].split(['"', '#']).next().and_then(|id| id.parse().ok()).expect("an id")
    }

    pub fn cookie(&self, name: &str) -> Option<&str> {
        self.set_cookies.iter().find(|c| c.starts_with(&format!("{name}="))).map(String::as_str)
    }
}

impl Browser {
    pub fn new(app: &TestApp) -> Self {
        let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
        Self { client, base: app.url(""), cookies: BTreeMap::new() }
    }

    pub async fn send(&mut self, method: Method, path: &str, form: Option<&[(&str, &str)]>, headers: &[(&str, &str)]) -> Page {
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if !self.cookies.is_empty() {
            let jar: Vec<String> = self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
            request = request.header(COOKIE, jar.join("; "));
        }
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        if let Some(form) = form {
            let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form.iter()).finish();
            request = request.header("content-type", "application/x-www-form-urlencoded").body(body);
        }
        let res = request.send().await.expect("request");
        let set_cookies: Vec<String> = res.headers().get_all(SET_COOKIE).iter().map(|v| v.to_str().unwrap().to_owned()).collect();
        for c in &set_cookies {
            let (pair, attributes) = c.split_once(';').unwrap_or((c, ""));
            let (name, value) = pair.split_once('=').expect("name=value");
            if value.is_empty() || attributes.contains("Max-Age=0") {
                self.cookies.remove(name);
            } else {
                self.cookies.insert(name.to_owned(), value.to_owned());
            }
        }
        let location = res.headers().get("location").map(|v| v.to_str().unwrap().to_owned());
        let (status, headers) = (res.status(), res.headers().clone());
        Page { status, location, set_cookies, headers, html: res.text().await.expect("body") }
    }

    /// A POST of `body` as it is (an upload by the page's script), with
    /// the cookies and `headers`.
    pub async fn post_raw(&mut self, path: &str, content_type: &str, body: Vec<u8>, headers: &[(&str, &str)]) -> Page {
        let mut request = self.client.post(format!("{}{path}", self.base)).header("content-type", content_type).body(body);
        if !self.cookies.is_empty() {
            let jar: Vec<String> = self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
            request = request.header(COOKIE, jar.join("; "));
        }
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let res = request.send().await.expect("request");
        let location = res.headers().get("location").map(|v| v.to_str().unwrap().to_owned());
        let (status, headers) = (res.status(), res.headers().clone());
        Page { status, location, set_cookies: Vec::new(), headers, html: res.text().await.expect("body") }
    }

    pub async fn get(&mut self, path: &str) -> Page {
        self.send(Method::GET, path, None, &[]).await
    }

    pub async fn post(&mut self, path: &str, form: &[(&str, &str)]) -> Page {
        self.send(Method::POST, path, Some(form), &[]).await
    }

    /// Opens the sign-in form and submits it.
    pub async fn sign_in(&mut self, email: &str, password: &str) -> Page {
        let form = self.get("/app/login").await;
        assert_eq!(form.status, StatusCode::OK, "{}", form.html);
        let token = form.field("csrf");
        self.post("/app/login", &[("csrf", &token), ("email", email), ("password", password)]).await
    }

    /// Signs in with the test password and lands on the inbox.
    pub async fn signed_in(app: &TestApp, email: &str) -> Self {
        let mut browser = Self::new(app);
        let answer = browser.sign_in(email, PASSWORD).await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "{}", answer.html);
        browser
    }

    /// The inbox page, which must answer 200.
    pub async fn inbox(&mut self, query: &str) -> Page {
        let page = self.get(&format!("/app{query}")).await;
        assert_eq!(page.status, StatusCode::OK, "{:?} {}", page.location, page.html);
        page
    }

    /// The conversation page, which must answer 200.
    pub async fn conversation(&mut self, id: i64) -> Page {
        let page = self.get(&format!("/app/conversations/{id}")).await;
        assert_eq!(page.status, StatusCode::OK, "{:?} {}", page.location, page.html);
        page
    }

    /// Submits a form of the conversation page with its tokens and
    /// `fields`; a take carries the assignee the page shows, as its form does.
    pub async fn act(&mut self, id: i64, action: &str, fields: &[(&str, &str)]) -> Page {
        let page = self.conversation(id).await;
        let csrf = page.field("csrf");
        let client_id = page.field("client_message_id");
        let seen = if action == "take" && page.html.contains("name=\"seen\"") { page.field("seen") } else { String::new() };
        let mut form = vec![("csrf", csrf.as_str()), ("client_message_id", client_id.as_str())];
        if action == "take" {
            form.push(("seen", seen.as_str()));
        }
        form.extend_from_slice(fields);
        self.post(&format!("/app/conversations/{id}/{action}"), &form).await
    }

    /// As `act`, which must answer with the way back to the page.
    pub async fn acted(&mut self, id: i64, action: &str, fields: &[(&str, &str)]) {
        let answer = self.act(id, action, fields).await;
        assert_eq!(answer.status, StatusCode::SEE_OTHER, "{action}: {}", answer.html);
        let back = answer.location.unwrap_or_default();
        assert_eq!(back.split('#').next(), Some(format!("/app/conversations/{id}").as_str()), "{action}: back to the page");
    }
}
