//! Request bodies and queries.
//!
//! Each request body is one type that derives both
//! [`FromFields`](crate::extract::FromFields) (how it is read and checked,
//! field by field) and `utoipa::ToSchema` (what the OpenAPI document
//! shows): the fields' names and whether each is required are declared
//! once, and a text field's type carries its rule to both. A `From` impl
//! turns it into the domain's input, with the defaults of the fields left
//! out. The web app's forms are read into the same types. A query is a
//! derived type marked `#[fields(query)]`, which also documents it as the
//! route's parameters.

pub mod admin;
pub mod devices;
pub mod mobile;
pub mod schema;
pub mod values;
pub mod verification;
pub mod widget;

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::admin::{OperatorCreateRequest, PersonalTokenCreateRequest, SiteCreateRequest};
    use super::widget::WidgetConversationRequest;
    use crate::error::ApiError;
    use crate::extract::{Fields, FromFields, Shape};

    fn read<T: FromFields>(body: Value) -> Result<T, Vec<(String, Vec<String>)>> {
        let map = body.as_object().expect("an object").clone();
        let mut fields = Fields::new(&map);
        let parsed = T::from_fields(&mut fields);
        fields.finish(parsed).map_err(|e| match e {
            ApiError::Domain(parley_domain::DomainError::Validation(errors)) => errors.fields().clone().into_iter().collect(),
            other => panic!("not a validation error: {other:?}"),
        })
    }

    fn named(errors: &[(String, Vec<String>)]) -> Vec<&str> {
        let mut names: Vec<&str> = errors.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        names
    }

    #[test]
    fn a_derived_reader_names_every_bad_field_at_once() {
        let errors = read::<OperatorCreateRequest>(json!({"email": "nope", "password": "short", "role": "owner", "site_ids": [1, 0]}))
            .err()
            .expect("refused");
        assert_eq!(named(&errors), ["email", "name", "password", "role", "site_ids"]);
        let name = errors.iter().find(|(n, _)| n == "name").expect("name");
        assert_eq!(name.1, ["is required"]);
        let sites = errors.iter().find(|(n, _)| n == "site_ids").expect("site_ids");
        assert_eq!(sites.1, ["item 1: must be a positive integer id"]);
    }

    #[test]
    fn optional_fields_may_be_null_or_blank_and_defaults_fill_them() {
        let site: parley_domain::tenancy::NewSiteInput =
            read::<SiteCreateRequest>(json!({"name": " Shop ", "widget_title": "  ", "privacy_url": null})).expect("read").into();
        assert_eq!(site.name, "Shop");
        assert_eq!(site.appearance.title, "Shop", "a blank title is none, and the name stands in");
        assert_eq!(site.appearance.accent_color, "#2563eb");
        assert!(site.domains.is_empty());
    }

    #[test]
    fn rules_that_are_not_text_keep_their_messages() {
        let errors =
            read::<WidgetConversationRequest>(json!({"token": "t", "visitor_uuid": "v", "message": "hi", "privacy_accepted": false}))
                .err()
                .expect("refused");
        assert_eq!(errors, [("privacy_accepted".to_owned(), vec!["must be true to open a conversation".to_owned()])]);
        let errors = read::<PersonalTokenCreateRequest>(json!({"name": "ci", "expires_in_days": 366})).err().expect("refused");
        assert_eq!(errors, [("expires_in_days".to_owned(), vec!["must be an integer from 1 to 365".to_owned()])]);
    }

    #[test]
    fn a_long_list_of_bad_items_is_named_by_its_first_few() {
        let errors = read::<OperatorCreateRequest>(json!({
            "email": "a@b.example", "name": "A", "password": "a long password", "role": "agent", "site_ids": vec![0; 5000]
        }))
        .err()
        .expect("refused");
        let sites = &errors.iter().find(|(n, _)| n == "site_ids").expect("site_ids").1;
        assert_eq!(sites.len(), 11);
        assert_eq!(sites[10], "and 4990 more items");
    }

    #[test]
    fn each_field_says_how_a_form_spells_it() {
        let shape = |fields: &[(&str, Shape)], name: &str| fields.iter().find(|(n, _)| *n == name).map(|(_, s)| *s);
        assert_eq!(shape(SiteCreateRequest::FIELDS, "domains"), Some(Shape::List));
        assert_eq!(shape(SiteCreateRequest::FIELDS, "name"), Some(Shape::Text));
        assert_eq!(shape(crate::requests::admin::OperatorInviteRequest::FIELDS, "site_ids"), Some(Shape::Numbers));
        assert_eq!(shape(PersonalTokenCreateRequest::FIELDS, "expires_in_days"), Some(Shape::Number));
        assert_eq!(shape(WidgetConversationRequest::FIELDS, "privacy_accepted"), Some(Shape::Bool));
        assert_eq!(OperatorCreateRequest::FIELDS.len(), 5, "every field is declared");
    }
}
