//! `#[derive(FromFields)]`: a request type of `parley-http` that is read
//! field by field from a JSON body, a query or a form, and documented by
//! `utoipa::ToSchema` from the same declaration, so the document and the
//! reader cannot name different fields.
//!
//! Each field is read by its type's `Field` implementation under its own
//! name; an `Option<T>` field may be left out (or sent as `null`), any
//! other is required. Every field is read before the first problem is
//! returned, so one answer names every bad field. The generated code
//! refers to `crate::extract`: the derive serves `parley-http` only.
//!
//! The JSON name of a field is its Rust name. utoipa's renaming
//! attributes (`rename`, `rename_all`) are refused on a type deriving
//! this, since the document would then name a field the reader never
//! reads. `Option` is recognised by name: an alias of it is not.

use proc_macro::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, Fields, GenericArgument, PathArguments, Type, parse_macro_input};

/// With `#[fields(query)]` on the struct, the type is a query: it is also
/// documented as the query's parameters (`utoipa::IntoParams`), each with
/// its field's doc comment as its description and its type's schema
/// (`Field::schema`).
#[proc_macro_derive(FromFields, attributes(fields))]
pub fn derive_from_fields(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match expand(&input) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn expand(input: &DeriveInput) -> syn::Result<proc_macro2::TokenStream> {
    let name = &input.ident;
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(name, "FromFields reads structs with named fields"));
    };
    let Fields::Named(fields) = &data.fields else {
        return Err(syn::Error::new_spanned(name, "FromFields reads structs with named fields"));
    };
    refuse_renaming(&input.attrs)?;
    let query = is_query(&input.attrs)?;
    let mut params = Vec::new();
    let mut reads = Vec::new();
    let mut shapes = Vec::new();
    let mut inits = Vec::new();
    for field in &fields.named {
        let ident = field.ident.as_ref().ok_or_else(|| syn::Error::new_spanned(field, "a field without a name"))?;
        refuse_renaming(&field.attrs)?;
        let key = ident.to_string();
        let key = key.strip_prefix("r#").unwrap_or(&key).to_owned();
        let (ty, optional) = match option_inner(&field.ty) {
            Some(inner) => (inner, true),
            None => (&field.ty, false),
        };
        let read = quote! { <#ty as crate::extract::Field>::read(__fields, #key) };
        reads.push(if optional {
            quote! { let #ident = #read; }
        } else {
            quote! { let #ident = #read; let #ident = __fields.present(#key, #ident); }
        });
        shapes.push(quote! { (#key, <#ty as crate::extract::Field>::SHAPE) });
        let description = doc(&field.attrs);
        let required = !optional;
        params.push(quote! {
            crate::requests::schema::query(#key, #required, #description, <#ty as crate::extract::Field>::schema())
        });
        inits.push(quote! { #ident: #ident? });
    }
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let into_params = query.then(|| {
        quote! {
            impl #impl_generics utoipa::IntoParams for #name #ty_generics #where_clause {
                fn into_params(
                    _: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
                ) -> Vec<utoipa::openapi::path::Parameter> {
                    vec![#(#params),*]
                }
            }
        }
    });
    Ok(quote! {
        #into_params

        impl #impl_generics crate::extract::FromFields for #name #ty_generics #where_clause {
            const FIELDS: &'static [(&'static str, crate::extract::Shape)] = &[#(#shapes),*];

            fn from_fields(__fields: &mut crate::extract::Fields<'_>) -> Result<Self, crate::extract::Invalid> {
                #(#reads)*
                Ok(Self { #(#inits),* })
            }
        }
    })
}

/// Refuses the utoipa and serde arguments that would make the document
/// name or shape a field differently from how it is read (`rename`,
/// `rename_all`, `skip`, `flatten`, …), wherever they appear in the
/// attribute: it is read as tokens, so no argument can hide one.
fn refuse_renaming(attrs: &[syn::Attribute]) -> syn::Result<()> {
    const REFUSED: [&str; 6] = ["rename", "rename_all", "skip", "skip_deserializing", "flatten", "inline_fields"];
    fn mentions(tokens: proc_macro2::TokenStream) -> Option<String> {
        tokens.into_iter().find_map(|t| match t {
            proc_macro2::TokenTree::Ident(i) if REFUSED.iter().any(|r| i == r) => Some(i.to_string()),
            proc_macro2::TokenTree::Group(g) => mentions(g.stream()),
            _ => None,
        })
    }
    for attr in attrs.iter().filter(|a| a.path().is_ident("schema") || a.path().is_ident("serde")) {
        if let syn::Meta::List(list) = &attr.meta
            && let Some(word) = mentions(list.tokens.clone())
        {
            let message = format!("FromFields reads each field under its Rust name, as declared: `{word}` would make the document differ");
            return Err(syn::Error::new_spanned(attr, message));
        }
    }
    Ok(())
}

/// Whether the struct says `#[fields(query)]`.
fn is_query(attrs: &[syn::Attribute]) -> syn::Result<bool> {
    let mut query = false;
    for attr in attrs.iter().filter(|a| a.path().is_ident("fields")) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("query") {
                query = true;
                Ok(())
            } else {
                Err(meta.error("FromFields knows only #[fields(query)]"))
            }
        })?;
    }
    Ok(query)
}

/// A field's doc comment as one line of text: its lines joined by spaces.
fn doc(attrs: &[syn::Attribute]) -> String {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value().trim().to_owned()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    lines.join(" ")
}

/// `T` of a field typed `Option<T>`.
fn option_inner(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else { return None };
    if path.qself.is_some() {
        return None;
    }
    let last = path.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else { return None };
    match args.args.first()? {
        GenericArgument::Type(inner) if args.args.len() == 1 => Some(inner),
        _ => None,
    }
}
