//! `app_process [vm-options] CMD-DIR [--options] CLASS [args]` with `CLASSPATH=JAR`: only
//! uiautomator2's server is known, and only from the pinned `u2.jar` (sha256, see
//! [`crate::u2::jar`]). Anything else fails as `app_process` does when the class is not in
//! the class path. A started server is a resident process: its first line goes out, the
//! stream stays open (`Exec::resident`), and the transport ends it when the stream closes.
//! A second server while one runs fails as uiautomator2's `core.py` sees it fail:
//! "already registered" (one UiAutomation connection per phone).

use crate::device::{Device, Exec};
use crate::u2::jar::{is_pinned_jar, U2_DEFAULT_PORT, U2_MAIN_CLASS};

const STARTING: &str = "[server] INFO: [UiAutomator2Server] Starting Server\n";

pub(crate) fn run(d: &mut Device, args: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    // VM options, then the command directory, then runtime options, then the class.
    let mut rest = args.iter().copied().skip_while(|a| a.starts_with('-'));
    let _cmd_dir = rest.next();
    let mut rest = rest.skip_while(|a| a.starts_with("--"));
    let Some(class) = rest.next() else {
        e.stderr = b"Error: no class name or --zygote supplied.\nUsage: app_process [java-options] cmd-dir start-class-name [options]\n".to_vec();
        e.code = 134;
        return 40;
    };
    let main_args: Vec<&str> = rest.collect();
    let classpath = d
        .cmd_env
        .iter()
        .find(|(k, _)| k == "CLASSPATH")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    // The VM reads every class-path entry that exists; the class must be in one of them.
    let entries: Vec<&str> = classpath.split(':').filter(|p| !p.is_empty()).collect();
    let found = class == U2_MAIN_CLASS
        && entries
            .iter()
            .any(|p| d.read_file(p).is_some_and(|data| is_pinned_jar(&data)));
    // Starting the VM and opening the jar costs the same whether the class is there.
    let vm_ms = d.cost(300, 600);
    if !found {
        let zips: Vec<String> = entries
            .iter()
            .filter(|p| d.read_file(p).is_some())
            .map(|p| format!("zip file \"{p}\""))
            .collect();
        e.stderr = format!(
            "Exception in thread \"main\" java.lang.ClassNotFoundException: Didn't find class \"{class}\" on path: DexPathList[[{}],nativeLibraryDirectories=[/system/lib64, /system_ext/lib64]]\n\
             \tat dalvik.system.BaseDexClassLoader.findClass(BaseDexClassLoader.java:259)\n\
             \tat java.lang.ClassLoader.loadClass(ClassLoader.java:379)\n\
             \tat java.lang.ClassLoader.loadClass(ClassLoader.java:312)\n\
             \tat com.android.internal.os.RuntimeInit.findStaticMain(RuntimeInit.java:354)\n\
             \tat com.android.internal.os.RuntimeInit.applicationInit(RuntimeInit.java:604)\n\
             \tat com.android.internal.os.RuntimeInit.main(RuntimeInit.java:363)\n",
            zips.join(",")
        )
        .into_bytes();
        e.code = 1;
        return vm_ms;
    }
    let port = match port_arg(&main_args) {
        Ok(p) => p,
        Err(msg) => {
            e.stderr = msg.into_bytes();
            e.code = 1;
            return vm_ms;
        }
    };
    let Some(id) = d.u2.start(port) else {
        e.stdout = STARTING.as_bytes().to_vec();
        e.stderr = b"java.lang.IllegalStateException: UiAutomationService android.accessibilityservice.IAccessibilityServiceClient$Stub$Proxy@5deffd5already registered!\n\
            \tat android.os.Parcel.createExceptionOrNull(Parcel.java:3023)\n\
            \tat android.os.Parcel.createException(Parcel.java:3007)\n\
            \tat android.os.Parcel.readException(Parcel.java:2990)\n\
            \tat android.app.IUiAutomationConnection$Stub$Proxy.connect(IUiAutomationConnection.java:424)\n\
            \tat android.app.UiAutomation.connect(UiAutomation.java:316)\n"
            .to_vec();
        e.code = 1;
        return vm_ms + 200;
    };
    d.counters.u2_starts += 1;
    e.stdout = STARTING.as_bytes().to_vec();
    e.resident = Some(id);
    // Loading the 3.7 MB jar, connecting UiAutomation, binding the port.
    vm_ms + d.cost(700, 1400)
}

/// `-p PORT` / `--port PORT` (1–65535), default 9008; the server's own messages.
fn port_arg(args: &[&str]) -> Result<u16, String> {
    let mut it = args.iter();
    let mut port = U2_DEFAULT_PORT;
    while let Some(a) = it.next() {
        if *a == "-p" || *a == "--port" {
            let v = it.next().copied().unwrap_or("");
            port = match v.parse::<u16>() {
                Ok(p) if p >= 1 => p,
                _ => {
                    return Err(format!(
                        "Invalid port: {v}. Must be an integer between 1 and 65535.\n"
                    ))
                }
            };
        }
    }
    Ok(port)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_argument() {
        assert_eq!(port_arg(&[]), Ok(9008));
        assert_eq!(port_arg(&["-p", "9010"]), Ok(9010));
        assert!(port_arg(&["-p", "0"]).is_err());
        assert!(port_arg(&["-p", "x"]).is_err());
    }
}
