//! Typed kernel launches: each kernel's parameters are one struct ([`kernel_params!`]), filled by
//! name at the launch site and pushed in the order of the `.cu` signature it mirrors. The tests
//! read the embedded sources' signatures (`signature`) and compare them with the structs, so a
//! parameter added, dropped, moved or retyped on one side only fails a test without a GPU.

use std::marker::PhantomData;

use cudarc::driver::{CudaSlice, CudaViewMut, LaunchArgs, PushKernelArg};

/// A kernel parameter: how it is pushed onto a launch, and its C type as the kernels spell it.
pub(crate) trait Param {
    fn push<'a>(&'a mut self, b: &mut LaunchArgs<'a>);
    #[cfg(test)]
    fn c_type() -> String;
}

/// Element types of device buffers, by their C name in the kernels.
pub(crate) trait Elem {
    #[cfg(test)]
    const C: &'static str;
}

macro_rules! scalars {
    ($($t:ty => $c:literal),*) => {$(
        impl Elem for $t {
            #[cfg(test)]
            const C: &'static str = $c;
        }
        impl Param for $t {
            fn push<'a>(&'a mut self, b: &mut LaunchArgs<'a>) {
                b.arg(&*self);
            }
            #[cfg(test)]
            fn c_type() -> String {
                $c.into()
            }
        }
    )*};
}
scalars!(u8 => "u8", u32 => "u32", u64 => "u64", i32 => "int", f64 => "double");

impl<T: Elem> Param for &CudaSlice<T> {
    fn push<'a>(&'a mut self, b: &mut LaunchArgs<'a>) {
        b.arg(*self);
    }
    #[cfg(test)]
    fn c_type() -> String {
        format!("const {}*", T::C)
    }
}

impl<T: Elem> Param for &mut CudaSlice<T> {
    fn push<'a>(&'a mut self, b: &mut LaunchArgs<'a>) {
        b.arg(&mut **self);
    }
    #[cfg(test)]
    fn c_type() -> String {
        format!("{}*", T::C)
    }
}

impl<T: Elem> Param for CudaViewMut<'_, T> {
    fn push<'a>(&'a mut self, b: &mut LaunchArgs<'a>) {
        b.arg(self);
    }
    #[cfg(test)]
    fn c_type() -> String {
        format!("{}*", T::C)
    }
}

/// An optional buffer: a null pointer when absent.
impl<T: Elem> Param for Option<&CudaSlice<T>> {
    fn push<'a>(&'a mut self, b: &mut LaunchArgs<'a>) {
        static NULL: u64 = 0;
        match self {
            Some(s) => b.arg(*s),
            None => b.arg(&NULL),
        };
    }
    #[cfg(test)]
    fn c_type() -> String {
        format!("const {}*", T::C)
    }
}

/// An optional output buffer: a null pointer when absent.
impl<T: Elem> Param for Option<&mut CudaSlice<T>> {
    fn push<'a>(&'a mut self, b: &mut LaunchArgs<'a>) {
        static NULL: u64 = 0;
        match self {
            Some(s) => b.arg(&mut **s),
            None => b.arg(&NULL),
        };
    }
    #[cfg(test)]
    fn c_type() -> String {
        format!("{}*", T::C)
    }
}

/// A device address of `T`s that several host threads write disjoint parts of at once (so no
/// one of them holds the buffer mutably).
pub(crate) struct DeviceAddr<T>(u64, PhantomData<T>);

impl<T> DeviceAddr<T> {
    pub fn new(addr: u64) -> DeviceAddr<T> {
        DeviceAddr(addr, PhantomData)
    }
}

impl<T: Elem> Param for DeviceAddr<T> {
    fn push<'a>(&'a mut self, b: &mut LaunchArgs<'a>) {
        b.arg(&self.0);
    }
    #[cfg(test)]
    fn c_type() -> String {
        format!("{}*", T::C)
    }
}

/// A struct of one kernel's parameters, in the order of its signature, named after `$kernel`
/// as the `.cu` file spells it (`gauss_sets_l##M` for a templated family); `launch` pushes them
/// and launches, an error reading "launching {what}: ...".
macro_rules! kernel_params {
    ($(#[$doc:meta])* $name:ident = $kernel:literal { $($field:ident: $ty:ty),* $(,)? }) => {
        $(#[$doc])*
        #[allow(non_snake_case)]
        pub(crate) struct $name<'a> {
            $(pub $field: $ty,)*
        }

        impl<'a> $name<'a> {
            #[cfg(test)]
            pub const KERNEL: &'static str = $kernel;

            /// # Safety
            /// The buffers hold what the kernel reads and writes at `cfg`'s grid.
            pub unsafe fn launch(mut self, gpu: &$crate::runtime::gpu::Gpu, k: &$crate::runtime::gpu::Kernel, cfg: cudarc::driver::LaunchConfig, what: &str) -> $crate::runtime::gpu::Result<()> {
                let mut b = gpu.launch(k)?;
                $($crate::runtime::launch::Param::push(&mut self.$field, &mut b);)*
                // SAFETY: the parameters are the signature's in its order (the tests check it);
                // the buffers are the caller's promise.
                unsafe { b.launch(cfg) }.map(|_| ()).map_err(|e| pc_core::PcError::Cuda(format!("launching {what}: {e}")))
            }

            /// The fields' names and C types, in order.
            #[cfg(test)]
            pub fn fields() -> Vec<(String, String)> {
                vec![$((stringify!($field).to_string(), <$ty as $crate::runtime::launch::Param>::c_type())),*]
            }
        }
    };
}
pub(crate) use kernel_params;

/// The parameters (name, C type) of kernel `name`'s `extern "C" __global__` signature in `src`,
/// with `__restrict__` dropped and the long integer names as the `u64` / `u32` / `u8` typedefs.
#[cfg(test)]
pub(crate) fn signature(src: &str, name: &str) -> Vec<(String, String)> {
    let src = src.replace("\\\n", "\n");
    let open = format!("{name}(");
    let at = src
        .match_indices(&open)
        .map(|(i, _)| i)
        .find(|&i| {
            let before = &src[..i];
            before.ends_with(char::is_whitespace) && before.rfind("__global__").is_some_and(|g| !before[g..].contains([';', '{', '}']))
        })
        .unwrap_or_else(|| panic!("no __global__ kernel {name} in the source"));
    let params = &src[at + open.len()..];
    let params = &params[..params.find(')').expect("a closed parameter list")];
    params
        .split(',')
        .map(|p| {
            let p = p.replace("__restrict__", "").replace('*', " * ");
            let words: Vec<&str> = p.split_whitespace().collect();
            let (name, ty) = words.split_last().expect("a named parameter");
            let ty = ty.join(" ").replace(" *", "*").replace("unsigned long long", "u64").replace("unsigned int", "u32").replace("unsigned char", "u8");
            (name.to_string(), ty)
        })
        .collect()
}

/// The names of the `extern "C" __global__` kernels of `src`, in order.
#[cfg(test)]
pub(crate) fn kernel_names(src: &str) -> Vec<String> {
    src.split("extern \"C\" __global__").skip(1).map(|rest| {
        let head = rest.trim_start().trim_start_matches("void").trim_start();
        let head = match head.strip_prefix("__launch_bounds__(") {
            Some(h) => h[h.find(')').expect("closed launch bounds") + 1..].trim_start(),
            None => head,
        };
        head[..head.find('(').expect("a parameter list")].trim().to_string()
    }).collect()
}

/// Asserts that each `(kernel, fields)` matches its signature in `src`, field by field, and that
/// every kernel of `src` has one.
#[cfg(test)]
pub(crate) fn assert_mirrors(src: &str, kernels: &[(&str, Vec<(String, String)>)]) {
    for (kernel, fields) in kernels {
        assert_eq!(fields, &signature(src, kernel), "the parameter struct of {kernel} does not mirror its signature");
    }
    for name in kernel_names(src) {
        assert!(kernels.iter().any(|(k, _)| *k == name), "kernel {name} has no parameter struct");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_read_through_qualifiers_macros_and_launch_bounds() {
        let src = "__device__ void k(int a);\nextern \"C\" __global__ void __launch_bounds__(256) k_l##M(                 \\\n    const double* __restrict__ C, unsigned long long n, u32 *out) {  \\\n k(1); }";
        let want = [("C", "const double*"), ("n", "u64"), ("out", "u32*")].map(|(a, b)| (a.to_string(), b.to_string()));
        assert_eq!(signature(src, "k_l##M"), want);
        assert_eq!(kernel_names(src), ["k_l##M"]);
    }
}
