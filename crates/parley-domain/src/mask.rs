//! Masked forms of contact details, for answers that must show that a
//! detail exists without revealing it (the widget's visitor, verification
//! target hints).

/// `ann.smith@example.com` becomes `a***@example.com`.
pub fn email(address: &str) -> String {
    match address.rsplit_once('@') {
        Some((local, domain)) => {
            let first: String = local.chars().take(1).collect();
            format!("{first}***@{domain}")
        }
        None => "***".to_owned(),
    }
}

/// `+14155550123` becomes `+1*******123`: the country's first digit and the
/// last three stay.
pub fn phone(number: &str) -> String {
    let digits: Vec<char> = number.chars().filter(char::is_ascii_digit).collect();
    if digits.len() < 5 {
        return "***".to_owned();
    }
    let hidden = "*".repeat(digits.len() - 4);
    let tail: String = digits[digits.len() - 3..].iter().collect();
    format!("+{}{hidden}{tail}", digits[0])
}

#[cfg(test)]
mod tests {
    #[test]
    fn masks() {
        assert_eq!(super::email("ann.smith@example.com"), "a***@example.com");
        assert_eq!(super::phone("+14155550123"), "+1*******123");
        assert_eq!(super::phone("+12"), "***");
    }
}
