; acc_copy_qual(x, y, n): y = x for work-items below n, one workgroup. Its
; arguments carry OpenCL access qualifiers in IR metadata, so clang-19 records
; .access read_only and write_only (and no .actual_access: nothing is noalias)
; in the AMDGPU metadata: the derived-access tests (docs/access.md).
target triple = "amdgcn-amd-amdhsa"

declare i32 @llvm.amdgcn.workitem.id.x()

define amdgpu_kernel void @acc_copy_qual(ptr addrspace(1) %x, ptr addrspace(1) %y, i32 %n) !kernel_arg_access_qual !0 {
entry:
  %i = call i32 @llvm.amdgcn.workitem.id.x()
  %in = icmp slt i32 %i, %n
  br i1 %in, label %body, label %done
body:
  %ix = sext i32 %i to i64
  %px = getelementptr float, ptr addrspace(1) %x, i64 %ix
  %v = load float, ptr addrspace(1) %px
  %py = getelementptr float, ptr addrspace(1) %y, i64 %ix
  store float %v, ptr addrspace(1) %py
  br label %done
done:
  ret void
}

!0 = !{!"read_only", !"write_only", !"none"}
