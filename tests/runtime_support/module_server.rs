//! A tiny HTTP server for `import.http`: serves one module text with a status that tests can
//! change, or drops connections without answering, and counts and records the requests.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};

/// How the server answers.
#[derive(Clone, Debug)]
pub enum Answer {
    /// This status and the module text.
    Status(u16),
    /// Accepts and closes the connection without a response.
    Drop,
    /// Accepts and holds the connection this long without a response.
    Silent(std::time::Duration),
}

struct State {
    answer: Answer,
    body: String,
    /// The head (request line and headers) of every request received.
    requests: Vec<String>,
}

#[derive(Clone)]
pub struct ModuleServer {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
}

impl ModuleServer {
    /// Starts serving `body` with status 200; one thread, one request per connection, until
    /// the test process ends.
    pub fn start(body: &str) -> ModuleServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let state = Arc::new(Mutex::new(State {
            answer: Answer::Status(200),
            body: body.to_string(),
            requests: Vec::new(),
        }));
        let shared = state.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut s) = conn else { continue };
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let (answer, body) = {
                    let mut st = shared.lock().expect("state");
                    st.requests
                        .push(String::from_utf8_lossy(&head).into_owned());
                    (st.answer.clone(), st.body.clone())
                };
                if let Answer::Silent(d) = answer {
                    std::thread::sleep(d);
                }
                if let Answer::Status(code) = answer {
                    let response = format!(
                        "HTTP/1.1 {code} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = s.write_all(response.as_bytes());
                }
            }
        });
        ModuleServer { addr, state }
    }

    pub fn url(&self) -> String {
        format!("http://{}/module.alloy", self.addr)
    }

    pub fn set(&self, answer: Answer, body: &str) {
        let mut st = self.state.lock().expect("state");
        st.answer = answer;
        st.body = body.to_string();
    }

    pub fn requests(&self) -> Vec<String> {
        self.state.lock().expect("state").requests.clone()
    }
}
