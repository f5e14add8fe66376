/* countersign sandbox web UI: chats, cards (JSON 2.0 and 1.0), clicks, forms, confirm
 * dialogs, live updates.
 *
 * Plain browser JavaScript, no build step. Card text is never parsed as HTML: every piece of
 * card or message text reaches the page through text nodes (textContent / Node.append(string)),
 * and the small markdown renderer below builds elements itself.
 *
 * Live updates come only from the server-sent event stream /sandbox/api/stream; an event for
 * the open chat re-fetches that chat's messages (bursts coalesced within REFRESH_DELAY_MS).
 * There is no timer-based polling.
 */
"use strict";

(() => {
  const API = "/sandbox/api";
  const REFRESH_DELAY_MS = 100;
  const TOAST_MS = 4500;
  const TEMPLATES = new Set([
    "blue", "wathet", "turquoise", "green", "yellow", "orange", "red", "carmine",
    "violet", "purple", "indigo", "grey", "default",
  ]);
  const BUTTON_TYPES = new Set([
    "default", "primary", "danger", "text", "primary_text", "danger_text",
    "primary_filled", "danger_filled", "laser",
  ]);
  const FONT_COLOURS = new Set([
    "red", "green", "blue", "grey", "gray", "orange", "yellow", "purple", "violet", "indigo",
    "turquoise", "wathet", "carmine", "default",
  ]);
  const SAFE_URL = /^(https?:|mailto:|lark:|feishu:)/i;
  const TOAST_TYPES = new Set(["success", "info", "warning", "error"]);

  const ui = {
    chats: [],
    users: [],
    apps: [],
    chatId: null,
    locale: localStorage.getItem("sandbox.locale") || "en_us",
    clickAs: localStorage.getItem("sandbox.clickAs") || "",
    sender: localStorage.getItem("sandbox.sender") || "",
    rendered: new Map(), // message_id -> {key, node}
    openHistory: new Set(),
    openJson: new Set(),
    drafts: new Map(), // message_id + "\n" + input name -> the text typed (kept across re-renders)
    unread: new Set(),
    stickToBottom: true,
  };

  // -- small helpers ---------------------------------------------------------------------

  const $ = (selector) => document.querySelector(selector);

  /** Create an element. attrs: class, text, dataset, on<event>, or plain attributes. */
  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = String(value);
      else if (key === "dataset") Object.assign(node.dataset, value);
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child)); // strings become text nodes
    }
    return node;
  }

  async function api(method, path, body) {
    const init = { method, headers: {} };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(API + path, init);
    let data = null;
    try {
      data = await response.json();
    } catch (_ignored) {
      data = null;
    }
    if (!response.ok) {
      const error = new Error((data && data.error && data.error.message) || `HTTP ${response.status}`);
      error.code = data && data.error && data.error.code;
      throw error;
    }
    return data;
  }

  const enc = encodeURIComponent;

  function userName(id) {
    const user = ui.users.find((u) => u.open_id === id);
    if (user) return user.name;
    const app = ui.apps.find((a) => a.app_id === id);
    return app ? app.name : id;
  }

  function shortTime(iso) {
    const date = new Date(iso);
    if (Number.isNaN(date.getTime())) return "";
    return date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }

  /** Text of a Lark text object in `locale`: i18n_content (2.0) / i18n (1.0), then content. */
  function i18n(obj, locale) {
    if (obj === null || obj === undefined) return "";
    if (typeof obj === "string") return obj;
    if (typeof obj !== "object") return String(obj);
    const map = obj.i18n_content || obj.i18n;
    if (locale && map && typeof map === "object" && typeof map[locale] === "string") return map[locale];
    if (typeof obj.content === "string") return obj.content;
    if (map && typeof map === "object") {
      const first = Object.values(map).find((v) => typeof v === "string");
      if (first !== undefined) return first;
    }
    return "";
  }

  // -- markdown (Lark's subset), built as DOM nodes -------------------------------------------

  const INLINE = [
    "`([^`\\n]+)`", // 1 code
    "\\[([^\\]\\n]+)\\]\\(([^)\\s]+)\\)", // 2,3 link
    "\\*\\*(.+?)\\*\\*", // 4 bold
    "~~(.+?)~~", // 5 strike
    "\\*([^*\\n]+)\\*", // 6 italic
    "<at\\s+(?:id|user_id|open_id|email)=['\"]?([^'\">\\s]+)['\"]?\\s*>([^<]*)</at>", // 7,8 mention
    "<font\\s+color=['\"]?([a-zA-Z_-]+)['\"]?\\s*>(.+?)</font>", // 9,10 colour
    "<br\\s*/?>", // line break
    "(https?://[^\\s<>()\\[\\]]+)", // 11 bare URL
  ].join("|");

  function link(url, label) {
    if (!SAFE_URL.test(url)) return document.createTextNode(label === url ? url : `${label} (${url})`);
    const anchor = h("a", { target: "_blank", rel: "noopener noreferrer" }, label);
    anchor.href = url;
    return anchor;
  }

  /** Append inline markdown of one line of text to `parent`. */
  function inline(text, parent) {
    const re = new RegExp(INLINE, "gi");
    let last = 0;
    let m;
    while ((m = re.exec(text)) !== null) {
      if (m.index > last) parent.append(text.slice(last, m.index));
      last = re.lastIndex;
      if (m[1] !== undefined) parent.append(h("code", null, m[1]));
      else if (m[2] !== undefined) {
        const anchor = link(m[3], m[2]);
        parent.append(anchor);
      } else if (m[4] !== undefined) inline(m[4], parent.appendChild(h("strong")));
      else if (m[5] !== undefined) inline(m[5], parent.appendChild(h("del")));
      else if (m[6] !== undefined) inline(m[6], parent.appendChild(h("em")));
      else if (m[7] !== undefined) {
        const who = m[8] || (m[7] === "all" ? "all" : userName(m[7]));
        parent.append(h("span", { class: "mention-chip" }, `@${who}`));
      } else if (m[9] !== undefined) {
        const colour = m[9].toLowerCase();
        const span = h("span", { class: FONT_COLOURS.has(colour) ? `font-${colour}` : null });
        inline(m[10], span);
        parent.append(span);
      } else if (m[11] !== undefined) parent.append(link(m[11], m[11]));
      else parent.append(h("br"));
    }
    if (last < text.length) parent.append(text.slice(last));
  }

  /** Lark markdown: paragraphs (a newline is a line break), lists, headings, rules, code fences. */
  function markdown(source) {
    const root = h("div", { class: "md" });
    const lines = String(source).replace(/\r\n?/g, "\n").split("\n");
    let para = null;
    let list = null;
    let fence = null;
    for (const line of lines) {
      if (fence) {
        if (/^\s*```/.test(line)) fence = null;
        else fence.append(fence.childNodes.length ? `\n${line}` : line);
        continue;
      }
      let m;
      if (/^\s*```/.test(line)) {
        para = list = null;
        fence = h("code");
        root.append(h("pre", null, fence));
      } else if ((m = /^\s*[-*+]\s+(.*)$/.exec(line))) {
        para = null;
        if (!list || list.tagName !== "UL") root.append((list = h("ul")));
        inline(m[1], list.appendChild(h("li")));
      } else if ((m = /^\s*\d+[.)]\s+(.*)$/.exec(line))) {
        para = null;
        if (!list || list.tagName !== "OL") root.append((list = h("ol")));
        inline(m[1], list.appendChild(h("li")));
      } else if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) {
        para = list = null;
        inline(m[2], root.appendChild(h("div", { class: `md-h md-h${m[1].length}` })));
      } else if (/^\s*(-{3,}|\*{3,})\s*$/.test(line)) {
        para = list = null;
        root.append(h("hr"));
      } else if (line.trim() === "") {
        if (!para && !list) root.append(h("div", { class: "md-gap" }));
        para = list = null;
      } else {
        list = null;
        if (para) para.append(h("br"));
        else root.append((para = h("p")));
        inline(line, para);
      }
    }
    return root;
  }

  /** A Lark text object ({tag: plain_text | lark_md, content, i18n_content}). */
  function textObject(obj, ctx, cls) {
    const text = i18n(obj, ctx.locale);
    if (obj && typeof obj === "object" && obj.tag === "lark_md") {
      const node = markdown(text);
      if (cls) node.classList.add(cls);
      return node;
    }
    // Lark's text_size and text_color on a text object (notation: the small grey size)
    const size = obj && typeof obj === "object" && /^[a-z_]{1,20}$/.test(obj.text_size || "") ? ` size-${obj.text_size}` : "";
    const colour = obj && typeof obj === "object" && /^[a-z_-]{1,20}$/.test(obj.text_color || "") ? ` color-${obj.text_color}` : "";
    return h("div", { class: `plain${size}${colour} ${cls || ""}`.trim() }, text);
  }

  // -- cards -------------------------------------------------------------------------------

  function columnFlex(column) {
    const width = String(column.width || "weighted");
    if (width === "auto") return "0 1 auto";
    if (/^\d{1,4}px$/.test(width)) return `0 0 ${width}`;
    const weight = Number.isFinite(Number(column.weight)) ? Math.max(1, Math.min(5, Number(column.weight))) : 1;
    return `${weight} 1 0`;
  }

  function renderElements(list, ctx) {
    return (Array.isArray(list) ? list : []).map((element) => renderElement(element, ctx));
  }

  function renderElement(e, ctx) {
    if (!e || typeof e !== "object") return null;
    const align = ["center", "right"].includes(e.text_align) ? ` align-${e.text_align}` : "";
    switch (e.tag) {
      case "markdown":
      case "lark_md": {
        const node = markdown(i18n(e, ctx.locale));
        node.className = `el el-markdown md${align}`;
        return node;
      }
      case "plain_text":
        return h("div", { class: `el el-text plain${align}` }, i18n(e, ctx.locale));
      case "div": {
        const node = h("div", { class: `el el-div${align}` });
        if (e.text) node.append(textObject(e.text, ctx));
        if (Array.isArray(e.fields)) {
          node.append(h("div", { class: "fields" }, e.fields.map((field) =>
            h("div", { class: field.is_short ? "field short" : "field" }, textObject(field.text, ctx)))));
        }
        if (e.extra) node.append(h("div", { class: "extra" }, renderElement(e.extra, ctx)));
        return node;
      }
      case "hr":
        return h("hr", { class: "el el-hr" });
      case "column_set": {
        const shaded = e.background_style && e.background_style !== "default" ? " shaded" : "";
        const node = h("div", { class: `el column-set flex-${e.flex_mode || "none"}${shaded}` });
        for (const column of Array.isArray(e.columns) ? e.columns : []) {
          const col = h("div", { class: `column valign-${column.vertical_align || "top"}` },
            renderElements(column.elements, ctx));
          col.style.flex = columnFlex(column);
          node.append(col);
        }
        return node;
      }
      case "column":
        return h("div", { class: "el column" }, renderElements(e.elements, ctx));
      case "button":
        return renderButton(e, ctx);
      case "input":
        return renderInput(e, ctx);
      case "action": // JSON 1.0 button row
        return h("div", { class: `el el-action layout-${e.layout || "flow"}` }, renderElements(e.actions, ctx));
      case "note":
        return h("div", { class: "el el-note" }, (Array.isArray(e.elements) ? e.elements : []).map((item) =>
          item && (item.tag === "img" || item.tag === "image")
            ? h("span", { class: "img-chip" }, "🖼")
            : textObject(item, ctx, "note-item")));
      case "img":
      case "image":
        return h("div", { class: "el el-img", title: e.img_key || "" },
          `🖼 ${i18n(e.alt, ctx.locale) || i18n(e.title, ctx.locale) || "image"}`);
      case "collapsible_panel": {
        const title = e.header && e.header.title ? i18n(e.header.title, ctx.locale) : "Details";
        const panel = h("details", { class: "el el-panel", open: Boolean(e.expanded) },
          h("summary", null, title), renderElements(e.elements, ctx));
        return panel;
      }
      case "interactive_container":
      case "form":
        return h("div", {
          class: `el el-${e.tag}${e.has_border ? " bordered" : ""}`,
          "data-form-name": e.tag === "form" ? String(e.name || "") : null,
        }, renderElements(e.elements, ctx));
      case "person":
        return h("span", { class: "el mention-chip" }, `@${userName(e.user_id || "")}`);
      default:
        return h("div", { class: "el el-unsupported" }, `[${String(e.tag)}: not rendered by the sandbox]`);
    }
  }

  function buttonUrl(e) {
    for (const behavior of Array.isArray(e.behaviors) ? e.behaviors : []) {
      if (behavior && behavior.type === "open_url") return behavior.default_url || behavior.pc_url || "";
    }
    return e.url || (e.multi_url && e.multi_url.url) || "";
  }

  function hasCallback(e) {
    if (Array.isArray(e.behaviors)) return e.behaviors.some((b) => b && b.type === "callback");
    return e.value !== undefined;
  }

  function draftKey(message, name) {
    return `${message.message_id}\n${name}`;
  }

  /** An input (text typed into a form); the text survives re-renders until the form resets. */
  function renderInput(e, ctx) {
    const name = typeof e.name === "string" ? e.name : "";
    const initial = typeof e.default_value === "string" ? e.default_value : "";
    const multiline = e.input_type === "multiline_text";
    const placeholder = i18n(e.placeholder, ctx.locale);
    const label = i18n(e.label, ctx.locale);
    const field = h(multiline ? "textarea" : "input", {
      type: multiline ? null : e.input_type === "password" ? "password" : "text",
      class: "card-input",
      name: name || null,
      placeholder: placeholder || null,
      maxlength: Number.isInteger(e.max_length) ? e.max_length : 1000,
      required: e.required === true,
      rows: multiline ? (Number.isInteger(e.rows) ? e.rows : 3) : null,
      "aria-label": label || placeholder || name || "input",
      "data-field-name": name || null,
      "data-default": initial,
    });
    field.cardConfirm = e.confirm && typeof e.confirm === "object" ? e.confirm : null;
    const key = draftKey(ctx.message, name);
    field.value = !ctx.readOnly && name && ui.drafts.has(key) ? ui.drafts.get(key) : initial;
    if (ctx.readOnly || e.disabled) field.disabled = true;
    else if (name) field.addEventListener("input", () => ui.drafts.set(key, field.value));
    return h("label", { class: `el el-input label-${e.label_position === "left" ? "left" : "top"}` },
      label ? h("span", { class: "input-label" }, label, e.required === true ? h("span", { class: "required-mark" }, " *") : null) : null,
      field);
  }

  function renderButton(e, ctx) {
    const label = i18n(e.text, ctx.locale) || "(button)";
    const type = BUTTON_TYPES.has(e.type) ? e.type : "default";
    const disabled = Boolean(e.disabled);
    const tips = disabled ? i18n(e.disabled_tips, ctx.locale) : i18n(e.hover_tips, ctx.locale);
    const button = h("button", {
      type: "button",
      class: `card-btn btn-${type} size-${e.size || "medium"}${e.width === "fill" ? " fill" : ""}`,
      title: tips || null,
      "data-element-id": e.element_id || null,
      "data-name": e.name || null,
      "data-form-action": e.form_action_type || null,
    }, label);
    if (disabled || ctx.readOnly) button.disabled = true;
    if (!ctx.readOnly && !disabled) {
      button.addEventListener("click", () => clickButton(ctx.message, e, button, ctx.locale));
    }
    // a disabled button gets no pointer events: the wrapper carries the tooltip
    return h("span", { class: `btn-wrap${e.width === "fill" ? " fill" : ""}`, title: tips || null }, button);
  }

  function renderCard(card, ctx) {
    const v2 = card.schema === "2.0";
    const config = card.config || {};
    const locales = Array.isArray(config.locales) ? config.locales : null;
    const cardCtx = { ...ctx, locale: !locales || locales.includes(ui.locale) ? ui.locale : null };
    const root = h("div", {
      class: `card ${v2 ? "card-v2" : "card-v1"}${config.width_mode === "fill" || config.wide_screen_mode ? " card-wide" : ""}`,
      "data-schema": v2 ? "2.0" : "1.0",
    });
    const header = card.header;
    if (header && (header.title || header.subtitle)) {
      const template = TEMPLATES.has(header.template) ? header.template : "default";
      root.dataset.template = template;
      const head = h("div", { class: `card-header tpl-${template}` });
      head.append(textObject(header.title, cardCtx, "card-title"));
      if (header.subtitle) head.append(textObject(header.subtitle, cardCtx, "card-subtitle"));
      if (Array.isArray(header.text_tag_list)) {
        head.append(h("div", { class: "tags" }, header.text_tag_list.map((tag) =>
          h("span", { class: `text-tag font-${tag.color || "default"}` }, i18n(tag.text, cardCtx.locale)))));
      }
      root.append(head);
    } else {
      root.dataset.template = "none";
    }
    let elements;
    if (v2) elements = card.body && card.body.elements;
    else if (card.i18n_elements && typeof card.i18n_elements === "object") {
      elements = card.i18n_elements[cardCtx.locale] || card.elements || Object.values(card.i18n_elements)[0];
    } else elements = card.elements;
    const body = h("div", { class: "card-body" }, renderElements(elements, cardCtx));
    if (!body.childNodes.length) body.append(h("div", { class: "el el-unsupported" }, "(empty card)"));
    root.append(body);
    return root;
  }

  function safeCard(card, ctx) {
    try {
      return renderCard(card, ctx);
    } catch (error) {
      return h("div", { class: "card card-broken" },
        h("div", { class: "el el-unsupported" }, `This card could not be rendered: ${error.message}`));
    }
  }

  // -- messages ----------------------------------------------------------------------------

  function textOf(content) {
    try {
      const parsed = JSON.parse(content);
      return typeof parsed.text === "string" ? parsed.text : content;
    } catch (_ignored) {
      return content;
    }
  }

  /** Text message body: plain text with <at> mentions as chips, nothing else interpreted. */
  function textBody(text) {
    const node = h("div", { class: "bubble" });
    const re = /<at\s+[^>]*?(?:user_id|id|open_id)=['"]?([^'">\s]+)['"]?[^>]*>([^<]*)<\/at>/gi;
    let last = 0;
    let m;
    while ((m = re.exec(text)) !== null) {
      if (m.index > last) node.append(text.slice(last, m.index));
      node.append(h("span", { class: "mention-chip" }, `@${m[2] || userName(m[1])}`));
      last = re.lastIndex;
    }
    if (last < text.length) node.append(text.slice(last));
    return node;
  }

  function contentNode(msgType, content, card, ctx) {
    if (msgType === "interactive" && card) return safeCard(card, ctx);
    if (msgType === "text") return textBody(textOf(content));
    return h("pre", { class: "bubble raw" }, `[${msgType}] ${content}`);
  }

  function parseCard(content) {
    try {
      const card = JSON.parse(content);
      return card && typeof card === "object" ? card : null;
    } catch (_ignored) {
      return null;
    }
  }

  function historyPanel(message) {
    const panel = h("ol", { class: "history" });
    message.history.forEach((revision, index) => {
      const card = message.msg_type === "interactive" ? parseCard(revision.content) : null;
      panel.append(h("li", { class: "revision" },
        h("div", { class: "revision-meta" },
          `#${index + 1} · ${revision.source} by ${userName(revision.actor)} · ${shortTime(revision.at)}`),
        contentNode(message.msg_type, revision.content, card, { message, readOnly: true, locale: ui.locale })));
    });
    return panel;
  }

  function clickFooter(message) {
    const clicks = message.clicks || [];
    if (!clicks.length) return null;
    const last = clicks[clicks.length - 1];
    const error = last.client_error ? ` · error ${last.client_error}` : "";
    const form = last.form_value ? ` · form ${JSON.stringify(last.form_value)}` : "";
    return h("div", { class: `msg-foot click-${last.status}`, title: form ? `${last.name}${form}` : null },
      `${clicks.length} click${clicks.length === 1 ? "" : "s"} · last by ${userName(last.operator)}: ${last.status}${error} · ${Math.round(last.latency_ms)} ms${form}`);
  }

  function renderMessage(message) {
    const id = message.message_id;
    const revisions = (message.history || []).length;
    const fromApp = message.sender_type === "app";
    const meta = h("div", { class: "msg-meta" },
      h("span", { class: "sender" }, message.sender_name || message.sender_id),
      fromApp ? h("span", { class: "chip chip-bot" }, "Bot") : null,
      h("time", { datetime: message.created_at }, shortTime(message.created_at)),
      message.forwarded_from
        ? h("span", { class: "chip chip-forwarded", title: `forwarded from ${message.forwarded_from}` }, "Forwarded")
        : null,
      message.parent_id ? h("span", { class: "chip", title: `reply to ${message.parent_id}` }, "↩ reply") : null,
      message.mentions_bot ? h("span", { class: "chip chip-mention" }, "@bot") : null,
      revisions > 1
        ? h("button", {
          type: "button",
          class: "chip updated-marker",
          "data-revisions": revisions,
          "aria-expanded": ui.openHistory.has(id) ? "true" : "false",
          title: "show the revisions",
          onclick: () => toggle(ui.openHistory, id),
        }, `updated · ${revisions} revisions`)
        : null,
      message.msg_type === "interactive"
        ? h("button", { type: "button", class: "chip chip-json", title: "show the card JSON", onclick: () => toggle(ui.openJson, id) }, "{ }")
        : null,
      h("button", {
        type: "button",
        class: "chip chip-forward",
        "data-action": "forward",
        title: "forward to another chat (a new message there, sent by the user under “Click as”)",
        onclick: () => forwardMessage(message),
      }, "Forward"));
    const ctx = { message, readOnly: false, locale: ui.locale };
    return h("article", {
      class: `msg ${fromApp ? "msg-app" : "msg-user"} msg-${message.msg_type}`,
      "data-message-id": id,
      "data-msg-type": message.msg_type,
    },
    h("div", { class: "avatar", "aria-hidden": "true" }, (message.sender_name || "?").slice(0, 1).toUpperCase()),
    h("div", { class: "msg-main" },
      meta,
      contentNode(message.msg_type, message.content, message.card, ctx),
      clickFooter(message),
      ui.openJson.has(id) ? h("pre", { class: "json" }, JSON.stringify(message.card, null, 2)) : null,
      ui.openHistory.has(id) ? historyPanel(message) : null));
  }

  function toggle(set, id) {
    if (set.has(id)) set.delete(id);
    else set.add(id);
    ui.rendered.delete(id);
    renderMessages(ui.lastItems || []);
  }

  function messageKey(message) {
    return JSON.stringify([message.content, message.history.length, (message.clicks || []).length,
      message.sender_name, ui.locale, ui.users.length]);
  }

  function renderMessages(items) {
    ui.lastItems = items;
    const list = $("#messages");
    const nearBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
    const seen = new Set();
    const nodes = items.map((message) => {
      seen.add(message.message_id);
      const key = messageKey(message);
      const cached = ui.rendered.get(message.message_id);
      if (cached && cached.key === key) return cached.node; // untouched messages keep their DOM
      const node = renderMessage(message);
      ui.rendered.set(message.message_id, { key, node });
      return node;
    });
    for (const id of [...ui.rendered.keys()]) if (!seen.has(id)) ui.rendered.delete(id);
    if (!nodes.length) nodes.push(h("p", { class: "empty" }, "No messages yet. Send one below, or let the bot post a card."));
    list.replaceChildren(...nodes);
    if (nearBottom || ui.stickToBottom) list.scrollTop = list.scrollHeight;
    ui.stickToBottom = false;
  }

  // -- loading and live updates ------------------------------------------------------------

  let refreshTimer = null;
  let refreshing = false;
  let refreshAgain = false;

  function scheduleRefresh() {
    if (refreshTimer === null) refreshTimer = setTimeout(refreshMessages, REFRESH_DELAY_MS);
  }

  async function refreshMessages() {
    refreshTimer = null;
    if (!ui.chatId) return;
    if (refreshing) {
      refreshAgain = true;
      return;
    }
    refreshing = true;
    const chatId = ui.chatId;
    try {
      const data = await api("GET", `/chats/${enc(chatId)}/messages`);
      if (chatId === ui.chatId) renderMessages(data.items || []);
    } catch (error) {
      if (chatId === ui.chatId) showToast("error", `Could not load messages: ${error.message}`);
    } finally {
      refreshing = false;
      if (refreshAgain) {
        refreshAgain = false;
        scheduleRefresh();
      }
    }
  }

  function connectStream() {
    const live = $("#live");
    const source = new EventSource(`${API}/stream`);
    let wasDown = false;
    source.onopen = () => {
      live.dataset.state = "live";
      live.textContent = "live";
      if (wasDown) { // catch up on what happened while the stream was down
        wasDown = false;
        loadDirectory();
        scheduleRefresh();
      }
    };
    source.onerror = () => {
      wasDown = true;
      live.dataset.state = "down";
      live.textContent = "reconnecting";
    };
    source.onmessage = (event) => {
      let data;
      try {
        data = JSON.parse(event.data);
      } catch (_ignored) {
        return;
      }
      if (data.type === "message" || data.type === "click") {
        if (data.chat_id === ui.chatId) scheduleRefresh();
        else if (data.type === "message" && data.chat_id) {
          ui.unread.add(data.chat_id);
          renderChats();
        }
      } else if (data.type === "users" || data.type === "chats") {
        loadDirectory();
      }
    };
  }

  async function loadDirectory() {
    try {
      const [users, chats, apps] = await Promise.all([
        api("GET", "/users"), api("GET", "/chats"), api("GET", "/apps"),
      ]);
      ui.users = users.items || [];
      ui.chats = chats.items || [];
      ui.apps = apps.items || [];
    } catch (error) {
      showToast("error", `Could not reach the sandbox: ${error.message}`);
      return;
    }
    renderAppStatus();
    renderUsers();
    renderChats();
  }

  async function refreshApps() {
    try {
      ui.apps = (await api("GET", "/apps")).items || [];
      renderAppStatus();
    } catch (_ignored) {
      // the status line is informative only
    }
  }

  // -- chrome: chats, pickers, app status -----------------------------------------------------

  function currentChat() {
    return ui.chats.find((c) => c.chat_id === ui.chatId) || null;
  }

  function renderChats() {
    const list = $("#chat-list");
    list.replaceChildren(...ui.chats.map((chat) => h("li", null,
      h("button", {
        type: "button",
        class: `chat-entry${chat.chat_id === ui.chatId ? " active" : ""}`,
        "data-chat-id": chat.chat_id,
        "aria-current": chat.chat_id === ui.chatId ? "true" : null,
        onclick: () => selectChat(chat.chat_id),
      },
      h("span", { class: "chat-name" }, chat.name),
      ui.unread.has(chat.chat_id) ? h("span", { class: "unread", title: "new messages" }, "●") : null,
      h("span", { class: "chat-sub" }, `${chat.chat_id} · ${chat.members.length} member${chat.members.length === 1 ? "" : "s"}${chat.chat_type === "p2p" ? " · p2p" : ""}`)))));
    const select = $("#chat-select");
    select.replaceChildren(...ui.chats.map((chat) => h("option", { value: chat.chat_id, "data-chat-id": chat.chat_id },
      `${ui.unread.has(chat.chat_id) ? "● " : ""}${chat.name}`)));
    if (ui.chatId) select.value = ui.chatId;
    const chat = currentChat();
    $("#chat-title").textContent = chat ? chat.name : "No chat";
    $("#chat-members").textContent = chat
      ? `${chat.chat_id} · ${chat.members.map(userName).join(", ")}${chat.apps.length ? ` · bots: ${chat.apps.join(", ")}` : ""}`
      : "";
    renderSenders();
  }

  function renderUsers() {
    const select = $("#click-as");
    const chat = currentChat();
    select.replaceChildren(...ui.users.map((user) => h("option", { value: user.open_id },
      `${user.name}${chat && !chat.members.includes(user.open_id) ? " (not in chat)" : ""}`)));
    if (!ui.users.some((u) => u.open_id === ui.clickAs)) ui.clickAs = ui.users.length ? ui.users[0].open_id : "";
    select.value = ui.clickAs;
  }

  function renderSenders() {
    const chat = currentChat();
    const members = chat ? ui.users.filter((u) => chat.members.includes(u.open_id)) : [];
    const select = $("#composer-sender");
    select.replaceChildren(...members.map((user) => h("option", { value: user.open_id }, user.name)));
    if (!members.some((u) => u.open_id === ui.sender)) ui.sender = members.length ? members[0].open_id : "";
    select.value = ui.sender;
    renderUsers();
  }

  function renderAppStatus() {
    const status = $("#app-status");
    status.replaceChildren(...ui.apps.map((app) => {
      const transport = app.callback_transport || "none";
      const connections = typeof app.connections === "number" ? app.connections : 0;
      const detail = transport === "ws" ? `long connection ×${connections}` : transport === "webhook" ? "webhook" : "no callback transport";
      return h("span", { class: `app-chip transport-${transport}`, title: `${app.app_id}: callbacks via ${detail}` },
        `${app.app_id}: ${detail}`);
    }));
  }

  function selectChat(chatId) {
    if (!chatId || chatId === ui.chatId) return;
    ui.chatId = chatId;
    ui.unread.delete(chatId);
    ui.rendered.clear();
    ui.stickToBottom = true;
    localStorage.setItem("sandbox.chat", chatId);
    history.replaceState(null, "", `#${chatId}`);
    $("#messages").replaceChildren(h("p", { class: "empty" }, "Loading…"));
    renderChats();
    if (refreshing) refreshAgain = true;
    else refreshMessages();
  }

  // -- actions -----------------------------------------------------------------------------

  let toastTimer = null;

  function showToast(type, text) {
    const toast = $("#toast");
    const kind = TOAST_TYPES.has(type) ? type : "info";
    toast.className = `toast toast-${kind}`;
    toast.dataset.type = kind;
    toast.textContent = text;
    toast.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { toast.hidden = true; }, TOAST_MS);
  }

  /** Lark's confirm dialog: resolves true for Confirm, false for Cancel (or Escape). */
  function askConfirm(title, text) {
    const dialog = $("#confirm-dialog");
    $("#confirm-title").textContent = title;
    $("#confirm-text").textContent = text;
    dialog.returnValue = "";
    return new Promise((resolve) => {
      dialog.addEventListener("close", () => resolve(dialog.returnValue === "accept"), { once: true });
      dialog.showModal();
    });
  }

  async function clickButton(message, element, button, locale) {
    if (!ui.clickAs) {
      showToast("error", "Choose a user under “Click as” first");
      return;
    }
    const formNode = button.closest(".el-form");
    const formAction = formNode ? element.form_action_type : undefined;
    const url = buttonUrl(element);
    if (url && SAFE_URL.test(url)) window.open(url, "_blank", "noopener");
    if (!hasCallback(element) && formAction !== "submit" && formAction !== "reset") {
      if (!url) showToast("info", "This button has no callback behaviour; Lark sends nothing");
      return;
    }
    const inputs = formNode ? [...formNode.querySelectorAll("[data-field-name]")] : [];
    // a submit also shows the confirm of an input of its form
    let confirm = element.confirm && typeof element.confirm === "object" ? element.confirm : null;
    if (!confirm && formAction === "submit") confirm = inputs.map((i) => i.cardConfirm).find(Boolean) || null;
    if (confirm && !(await askConfirm(i18n(confirm.title, locale), i18n(confirm.text, locale)))) return;
    if (formAction === "reset") { // the client puts the inputs back; nothing is sent
      for (const input of inputs) {
        input.value = input.dataset.default || "";
        ui.drafts.delete(draftKey(message, input.dataset.fieldName));
      }
      return;
    }
    const text = element.text && typeof element.text === "object" ? element.text.content : element.text;
    const body = { operator: ui.clickAs, button: element.element_id || element.name || String(text || "") };
    if (confirm) body.dialog = "accept";
    if (formAction === "submit") {
      body.form = Object.fromEntries(inputs.filter((i) => !i.disabled).map((i) => [i.dataset.fieldName, i.value]));
    }
    button.disabled = true;
    button.classList.add("loading");
    try {
      const answer = await api("POST", `/messages/${enc(message.message_id)}/click`, body);
      if (answer.client_error !== undefined && answer.client_error !== null) {
        showToast("error", `Error ${answer.client_error}: ${answer.client_error_msg || "the card callback failed"}`);
      } else if (answer.toast) {
        const toast = answer.toast;
        const toastText = (toast.i18n && typeof toast.i18n[ui.locale] === "string") ? toast.i18n[ui.locale] : i18n(toast, ui.locale);
        showToast(toast.type || "info", toastText);
      }
    } catch (error) {
      showToast("error", error.message);
    } finally {
      if (button.isConnected) {
        button.disabled = false;
        button.classList.remove("loading");
      }
      refreshApps();
    }
  }

  /** The forward dialog: resolves {chatId, interactive} for Forward, null for Cancel. */
  function askForward(message, interactive) {
    const dialog = $("#forward-dialog");
    const select = $("#forward-chat");
    select.replaceChildren(...ui.chats.map((chat) => h("option", { value: chat.chat_id },
      `${chat.name}${chat.chat_id === message.chat_id ? " (this chat)" : ""}`)));
    const other = ui.chats.find((chat) => chat.chat_id !== message.chat_id);
    select.value = other ? other.chat_id : message.chat_id;
    $("#forward-interactive").checked = interactive;
    dialog.returnValue = "";
    return new Promise((resolve) => {
      dialog.addEventListener("close", () => resolve(dialog.returnValue === "accept"
        ? { chatId: select.value, interactive: $("#forward-interactive").checked }
        : null), { once: true });
      dialog.showModal();
    });
  }

  /** Forward a message as the user under "Click as": Lark copies it into the chosen chat as a
   * new message of that user; a card's clicks there still go to the app that sent it, with
   * the copy's chat and message ids (only if the card enables forward interaction). */
  async function forwardMessage(message) {
    if (!ui.clickAs) {
      showToast("error", "Choose a user under “Click as” first: they forward it");
      return;
    }
    try {
      const faults = await api("GET", "/faults");
      const chosen = await askForward(message, Boolean(faults.forwarded_cards_interactive));
      if (!chosen) return;
      if (chosen.interactive !== Boolean(faults.forwarded_cards_interactive)) {
        await api("POST", "/faults", { forwarded_cards_interactive: chosen.interactive });
      }
      await api("POST", `/messages/${enc(message.message_id)}/forward`, { chat_id: chosen.chatId, by: ui.clickAs });
      const chat = ui.chats.find((c) => c.chat_id === chosen.chatId);
      showToast("info", `Forwarded to ${chat ? chat.name : chosen.chatId} as ${userName(ui.clickAs)}`);
    } catch (error) {
      showToast("error", error.message);
    }
  }

  async function send(event) {
    event.preventDefault();
    const input = $("#composer-text");
    const text = input.value;
    if (!text.trim() || !ui.chatId) return;
    const sendButton = $("#composer-send");
    sendButton.disabled = true;
    try {
      await api("POST", `/chats/${enc(ui.chatId)}/messages`, {
        sender: $("#composer-sender").value,
        text,
        mention_bot: $("#composer-mention").checked,
      });
      input.value = "";
      ui.stickToBottom = true; // the message itself arrives through the live stream
    } catch (error) {
      showToast("error", error.message);
    } finally {
      sendButton.disabled = false;
      input.focus();
    }
  }

  // -- start -------------------------------------------------------------------------------

  async function start() {
    const locale = $("#locale");
    locale.value = ui.locale === "zh_cn" ? "zh_cn" : "en_us";
    ui.locale = locale.value;
    locale.addEventListener("change", () => {
      ui.locale = locale.value;
      localStorage.setItem("sandbox.locale", ui.locale);
      renderMessages(ui.lastItems || []); // keys include the locale: every card re-renders
    });
    $("#click-as").addEventListener("change", (event) => {
      ui.clickAs = event.target.value;
      localStorage.setItem("sandbox.clickAs", ui.clickAs);
    });
    $("#composer-sender").addEventListener("change", (event) => {
      ui.sender = event.target.value;
      localStorage.setItem("sandbox.sender", ui.sender);
    });
    $("#chat-select").addEventListener("change", (event) => selectChat(event.target.value));
    $("#composer").addEventListener("submit", send);
    window.addEventListener("hashchange", () => selectChat(decodeURIComponent(location.hash.slice(1))));

    connectStream();
    await loadDirectory();
    const wanted = [decodeURIComponent(location.hash.slice(1)), localStorage.getItem("sandbox.chat")];
    const first = wanted.find((id) => id && ui.chats.some((c) => c.chat_id === id)) || (ui.chats[0] && ui.chats[0].chat_id);
    if (first) selectChat(first);
    else $("#messages").replaceChildren(h("p", { class: "empty" }, "No chats."));
  }

  start();
})();
