// Types for the Parley widget's page API (`window.Parley`), served
// beside /widget.js. Copy it into a project, or reference it:
//   /// <reference path="./parley-widget.d.ts" />

/** Who the page's signed-in user is, signed by the site's server with
 * the installation's identity secret: either `user_hash` (hex
 * HMAC-SHA256 of `user_id`) or `jwt` (HS256, `sub` = user id, `exp` at
 * most 24 hours ahead). */
export type ParleyIdentity =
  | ({ user_id: string; user_hash: string; jwt?: never } & ParleyProfile)
  | ({ jwt: string; user_id?: string; user_hash?: never } & ParleyProfile);

export interface ParleyProfile {
  name?: string;
  email?: string;
  phone?: string;
  attributes?: ParleyAttributes;
}

/** Custom facts about the visitor, shown to operators. Keys of at most
 * 64 characters; values are strings, numbers, booleans or null. */
export type ParleyAttributes = Record<string, string | number | boolean | null>;

export interface ParleyMessage {
  id: number;
  /** The conversation's public id. */
  conversation: string;
  /** Empty when the message is only files. */
  body: string;
  /** RFC 3339. */
  created_at: string;
  sender: { type: "visitor" | "operator" | "system"; name: string | null };
  /** The files it carries. */
  attachments: ParleyAttachment[];
}

export interface ParleyAttachment {
  id: string;
  /** The sender's name for it: show it, never use it as a path. */
  name: string;
  /** Told from the content by the server. */
  content_type: string;
  /** In bytes. */
  size: number;
  /** Signed; valid for at least an hour from when the message arrived. */
  url: string;
}

export interface ParleyEvents {
  /** The configuration is loaded and the widget is on the page. */
  ready: Record<string, never>;
  open: Record<string, never>;
  close: Record<string, never>;
  /** A message that arrived or was sent while the page was open. */
  message: ParleyMessage;
  /** The number of operator messages the visitor has not read changed. */
  unread: { count: number };
}

export interface Parley {
  (command: "open" | "close" | "toggle" | "show" | "hide" | "logout"): void;
  (command: "identify", identity: ParleyIdentity): void;
  (command: "set", values: { attributes: ParleyAttributes }): void;
  <E extends keyof ParleyEvents>(command: "on", event: E, listener: (data: ParleyEvents[E]) => void): void;
  /** Commands given before the script loaded, run in order once it has. */
  q?: IArguments[];
  /** The widget's version, once the script has loaded. */
  version?: string;
}

declare global {
  interface Window {
    Parley: Parley;
  }
}
