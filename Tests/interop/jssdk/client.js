// client.js -- what the verification page does with the Firebase JS SDK (loaded before it as a bundle that sets
// `globalThis.firebaseSDK = {app, database, Component}`: the `@firebase/app` and `@firebase/database` modules and
// `@firebase/component`'s Component class). Only the SDK's public API is used, plus the component hook that
// Firebase Auth itself uses to hand the database its ID token (`auth-internal`), here a token minted by
// `canopy token mint`. The test (test_jssdk_cluster.py) calls `canopyJS.*` through Selenium and reads what the
// listeners collected from `canopyJS.events`.
(function () {
    const { app: firebaseApp, database: db, Component } = globalThis.firebaseSDK;
    const clients = {};
    const events = [];
    const logs = [];
    // The SDK's own log lines: they show the WebSocket URLs it opens and the resets it follows.
    db.enableLogging((message) => logs.push(message));

    // Registered once, as Firebase Auth registers itself: each app gets the token it was opened with.
    const tokens = {};
    firebaseApp._registerComponent(new Component("auth-internal", (container) => {
        const token = tokens[container.getProvider("app").getImmediate().name] || null;
        return {
            getUid: () => null,
            getToken: async () => (token ? { accessToken: token } : null),
            addAuthTokenListener: (listener) => listener(token),
            removeAuthTokenListener: () => {},
        };
    }, "PRIVATE"));

    function record(client, kind, path, key, value) {
        events.push({ client, kind, path, key, value, at: Date.now() });
    }

    window.canopyJS = {
        events,
        logs,
        /// Opens a client `name` on `databaseURL`, authenticated with `token` when one is given.
        open(name, databaseURL, token) {
            tokens[name] = token || null;
            const app = firebaseApp.initializeApp({ databaseURL, projectId: "canopy-jssdk" }, name);
            const database = db.getDatabase(app);
            const connected = [];
            db.onValue(db.ref(database, ".info/connected"), (snap) => connected.push(snap.val()));
            clients[name] = { app, database, connected };
            return true;
        },
        connected(name) { return clients[name].connected; },
        async set(name, path, value) { await db.set(db.ref(clients[name].database, path), value); return true; },
        async update(name, path, value) { await db.update(db.ref(clients[name].database, path), value); return true; },
        async push(name, path, value) { return (await db.push(db.ref(clients[name].database, path), value)).key; },
        async get(name, path) { return (await db.get(db.ref(clients[name].database, path))).val(); },
        async increment(name, path) {
            const result = await db.runTransaction(db.ref(clients[name].database, path), (n) => (n || 0) + 1);
            return { committed: result.committed, value: result.snapshot.val() };
        },
        async onDisconnectSet(name, path, value) {
            await db.onDisconnect(db.ref(clients[name].database, path)).set(value);
            return true;
        },
        /// A write whose acknowledgement is recorded as an event, so its order against the listener's is known.
        setRecorded(name, path, value) {
            db.set(db.ref(clients[name].database, path), value).then(
                () => record(name, "ack", path, null, value),
                (error) => record(name, "nack", path, null, String(error)));
            return true;
        },
        listenValue(name, path) {
            db.onValue(db.ref(clients[name].database, path), (snap) => record(name, "value", path, null, snap.val()),
                (error) => record(name, "cancel", path, null, String(error)));
            return true;
        },
        listenChildren(name, path) {
            const at = db.ref(clients[name].database, path);
            db.onChildAdded(at, (snap) => record(name, "child_added", path, snap.key, snap.val()));
            db.onChildChanged(at, (snap) => record(name, "child_changed", path, snap.key, snap.val()));
            db.onChildRemoved(at, (snap) => record(name, "child_removed", path, snap.key, snap.val()));
            return true;
        },
        goOffline(name) { db.goOffline(clients[name].database); return true; },
        /// Long polling only, for every client of this page (the SDK refuses it once a client has connected).
        forceLongPolling() { db.forceLongPolling(); return true; },
        async close(name) { await firebaseApp.deleteApp(clients[name].app); delete clients[name]; return true; },
        storage() { return Object.assign({}, window.localStorage); },
        /// Forgets the hosts the SDK cached (`firebase:host:*`): the next client starts at its configured host.
        clearStorage() { window.localStorage.clear(); return true; },
    };
})();
