wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.body = '{"token":"","body":"benchmark message"}'
